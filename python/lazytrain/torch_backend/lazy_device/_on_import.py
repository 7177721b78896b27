"""Patching a module of another package (transformers) when it is imported:
transformers imports its submodules lazily, often after lazytrain, and
importing them here would import transformers for every user of the device."""
import sys


class _PatchOnImport:
    """A meta-path finder that runs `patch(module)` right after `name` executes."""

    def __init__(self, name, patch):
        self.name = name
        self.patch = patch

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            self.patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


def patch_on_import(name, patch):
    """`patch(module)` now if module `name` is loaded, else when it is
    imported (once: `patch` must be idempotent)."""
    module = sys.modules.get(name)
    if module is not None:
        patch(module)
    elif not any(isinstance(f, _PatchOnImport) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport(name, patch))
