"""HfArgumentParser: transformers' argparse over dataclasses. Each field is a
``--name`` flag with the field's type and default (help from the field's
``metadata={"help": ...}``); a bool field is a flag (``--do_train``, or
``--do_train false``); a List field takes several values; a field without a
default is required. parse_args_into_dataclasses returns one instance per
dataclass, in order."""
import argparse
import dataclasses
import json
import typing


def _parse_bool(text):
    if isinstance(text, bool):
        return text
    lowered = text.lower()
    if lowered in ("yes", "true", "t", "y", "1"):
        return True
    if lowered in ("no", "false", "f", "n", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got '{text}'")


def _unwrap_optional(tp):
    if typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        if all(a in (str, list) or typing.get_origin(a) in (list, typing.List) for a in args):
            return typing.List[str]
    return tp


class HfArgumentParser(argparse.ArgumentParser):
    def __init__(self, dataclass_types, **kwargs):
        kwargs.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        super().__init__(**kwargs)
        if dataclasses.is_dataclass(dataclass_types):
            dataclass_types = [dataclass_types]
        self.dataclass_types = list(dataclass_types)
        for dtype in self.dataclass_types:
            self._add_dataclass_arguments(dtype)

    def _add_dataclass_arguments(self, dtype):
        hints = typing.get_type_hints(dtype)
        for f in dataclasses.fields(dtype):
            if not f.init:
                continue
            tp = _unwrap_optional(hints[f.name])
            kwargs = {"help": f.metadata.get("help")}
            if f.default is not dataclasses.MISSING:
                kwargs["default"] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                kwargs["default"] = f.default_factory()
            else:
                kwargs["required"] = True
            if "choices" in f.metadata:
                kwargs["choices"] = f.metadata["choices"]
            if tp is bool:
                kwargs.update(type=_parse_bool, nargs="?", const=True)
                kwargs.setdefault("default", False)
            elif typing.get_origin(tp) in (list, typing.List):
                inner = typing.get_args(tp)
                kwargs.update(type=inner[0] if inner else str, nargs="+")
            elif tp in (int, float, str):
                kwargs["type"] = tp
            else:
                kwargs["type"] = str
            aliases = [f"--{f.name}"] + list(f.metadata.get("aliases", []))
            self.add_argument(*aliases, dest=f.name, **kwargs)

    def parse_args_into_dataclasses(self, args=None, return_remaining_strings=False):
        """One instance per dataclass from the command line (sys.argv[1:] or
        `args`); unknown flags are an error unless return_remaining_strings."""
        if return_remaining_strings:
            namespace, remaining = self.parse_known_args(args)
        else:
            namespace, remaining = self.parse_args(args), []
        outputs = self._instances(vars(namespace))
        return (*outputs, remaining) if return_remaining_strings else tuple(outputs)

    def parse_dict(self, values, allow_extra_keys=False):
        known = {f.name for d in self.dataclass_types for f in dataclasses.fields(d)}
        extra = sorted(set(values) - known)
        if extra and not allow_extra_keys:
            raise ValueError(f"Some keys are not used by the HfArgumentParser: {extra}")
        return tuple(self._instances(dict(values), defaults=True))

    def parse_json_file(self, json_file, allow_extra_keys=False):
        with open(json_file, encoding="utf-8") as f:
            return self.parse_dict(json.load(f), allow_extra_keys)

    def _instances(self, values, defaults=False):
        outputs = []
        for dtype in self.dataclass_types:
            names = {f.name for f in dataclasses.fields(dtype) if f.init}
            outputs.append(dtype(**{k: v for k, v in values.items() if k in names}))
        return outputs
