"""PretrainedConfig: a model's config.json as an object, as transformers' class
of that name: every field an attribute, ``to_dict``/``to_json_string``,
``save_pretrained(dir)`` and ``from_pretrained(dir)``.

The fields, their defaults and their checks are the C++ config classes'
(src/models/*_config.h), which read the same config.json the CLI writes:
a subclass names its ``model_type`` and the defaults come from C++. Fields the
model does not use are kept and written back, as transformers does.

``attn_implementation`` ("eager" or "sdpa") is transformers' keyword argument,
not a field: the constructor (so also a config.json that holds it) takes it
out as ``config._attn_implementation``, which to_dict and config.json leave
out; unset, it is the model's default (GPT-2 and Llama "sdpa", BERT and
RoBERTa "eager")."""
import json
import os

from .. import _C


def _number_or_text(value):
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


class PretrainedConfig:
    model_type = ""

    def __init__(self, **kwargs):
        fields = json.loads(_C._config_defaults(self.model_type))
        default_attention = fields.pop("attn_implementation")
        attention = kwargs.pop("attn_implementation", None)
        fields.update(kwargs)
        fields["model_type"] = self.model_type
        self.__dict__.update(fields)
        self._attn_implementation = default_attention if attention is None else attention

    # ---- dict and JSON ----
    def to_dict(self):
        """Every field, defaults included (what config.json holds)."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def _checked_json(self, source):
        """The fields read and checked by the C++ config class: LazytrainError
        naming `source` and the field for a bad value."""
        return _C._check_config(self.model_type, json.dumps(self.to_dict()), source)

    def _native_json(self, source):
        """What the C++ model is built from: the checked fields and attn_implementation
        (LazytrainError naming `source` for a value other than "eager" or "sdpa")."""
        fields = json.loads(self._checked_json(source))
        fields["attn_implementation"] = self._attn_implementation
        return json.dumps(fields)

    @classmethod
    def from_dict(cls, fields):
        fields = dict(fields)
        model_type = fields.pop("model_type", cls.model_type)
        if model_type != cls.model_type:
            raise ValueError(f"{cls.__name__} expects model_type '{cls.model_type}', got '{model_type}'")
        return cls(**fields)

    @classmethod
    def from_json_file(cls, path):
        try:
            with open(path, encoding="utf-8") as f:
                fields = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no such config file (a model directory holds config.json)") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        config = cls.from_dict(fields)
        config._checked_json(path)
        return config

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        """config.json of a model directory (or the file itself); kwargs override fields."""
        path = os.fspath(pretrained_model_name_or_path)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        config = cls.from_json_file(path)
        if "attn_implementation" in kwargs:
            config._attn_implementation = kwargs.pop("attn_implementation")
        config.__dict__.update(kwargs)
        return config

    def save_pretrained(self, save_directory):
        """Writes <save_directory>/config.json (atomically: a temporary file renamed)."""
        os.makedirs(save_directory, exist_ok=True)
        path = os.path.join(save_directory, "config.json")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(self.to_json_string())
        os.replace(tmp, path)

    def update_from_string(self, update_str):
        """"n_embd=128,n_layer=2" as transformers' PretrainedConfig.update_from_string; a field
        that is None takes an int, float or text, and "None" sets a field to None."""
        for pair in filter(None, update_str.split(",")):
            if "=" not in pair:
                raise ValueError(f"config override '{pair}' is not key=value")
            key, value = pair.split("=", 1)
            if key not in self.__dict__:
                raise ValueError(f"key {key} isn't in the original config dict")
            old = self.__dict__[key]
            if old is None or value in ("None", "null"):  # a nullable field (num_key_value_heads, pad_token_id)
                value = None if value in ("None", "null") else _number_or_text(value)
            elif isinstance(old, bool):
                if value.lower() not in ("true", "1", "yes", "y", "false", "0", "no", "n"):
                    raise ValueError(f"config override '{pair}': {key} is a bool; expected true or false, got '{value}'")
                value = value.lower() in ("true", "1", "yes", "y")
            elif isinstance(old, (int, float)):
                kind = int if isinstance(old, int) else float
                try:
                    value = kind(value)
                except ValueError:
                    raise ValueError(f"config override '{pair}': {key} is {'an int' if kind is int else 'a float'}; "
                                     f"got '{value}'") from None
            self.__dict__[key] = value

    def __eq__(self, other):
        return isinstance(other, PretrainedConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"{type(self).__name__} {self.to_json_string()}"
