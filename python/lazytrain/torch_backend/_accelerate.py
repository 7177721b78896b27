"""backend="lazytrain" for Hugging Face accelerate, hence for transformers.Trainer.

`TrainingArguments(torch_compile=True, torch_compile_backend="lazytrain")`
reaches torch.compile through accelerate: the Trainer builds an
`accelerate.utils.TorchDynamoPlugin(backend=...)`, whose __post_init__ turns
the name into a member of the closed enum `accelerate.utils.DynamoBackend`
(`DynamoBackend("LAZYTRAIN")`, a ValueError for any backend accelerate does
not list), and `Accelerator.prepare` later calls
`torch.compile(model, backend=member.value.lower())`. Importing
lazytrain.torch_backend adds LAZYTRAIN to that enum, so the Trainer is used
unchanged. (Dynamo's entry point alone is not enough here: accelerate checks
the name before torch.compile, and so before Dynamo loads entry points.)
"""
import importlib.util

NAME = "LAZYTRAIN"


def register():
    """Adds DynamoBackend.LAZYTRAIN to accelerate's enum where accelerate is
    installed; returns the member (None without accelerate). Idempotent."""
    if importlib.util.find_spec("accelerate") is None:
        return None
    from accelerate.utils.dataclasses import DynamoBackend

    member = DynamoBackend._value2member_map_.get(NAME)
    if member is not None:
        return member
    # A member as Enum's metaclass makes one for `class DynamoBackend(str, BaseEnum)`:
    # a str holding the value, with the enum's private name/value fields.
    member = str.__new__(DynamoBackend, NAME)
    member._name_ = NAME
    member._value_ = NAME
    member.__objclass__ = DynamoBackend
    member._sort_order_ = len(DynamoBackend._member_names_)
    DynamoBackend._member_names_.append(NAME)
    DynamoBackend._member_map_[NAME] = member
    DynamoBackend._value2member_map_[NAME] = member
    type.__setattr__(DynamoBackend, NAME, member)
    return member
