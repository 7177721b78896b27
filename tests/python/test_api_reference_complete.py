"""The API reference's lazytrain.Tensor has every member the class has at runtime.

The reference is built without importing lazytrain (docs/_ext/lazytrain_autoapi.py
reads python/lazytrain and the stub _C.pyi statically); most of Tensor's Python
methods are attached to the class when the package is imported
(``Tensor.max = ...`` in _reductions.py, the in-place ops of _views.py, ...).
The extension's ``tensor_members`` finds those attachments by reading the
modules; this test compares what it finds with the imported class: every public
name of ``dir(lazytrain.Tensor)``, its kind (method or property), the code it
comes from (the same function or lambda, or the native extension), its
parameters and its docstring. A new way of attaching a method that the reader
does not follow fails here, naming the member.
"""
import importlib.util
import inspect
import os

import pytest

import lazytrain

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(REPO, "python", "lazytrain")


def _extension():
    spec = importlib.util.spec_from_file_location(
        "lazytrain_autoapi_under_test", os.path.join(REPO, "docs", "_ext", "lazytrain_autoapi.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # needs neither Sphinx nor autoapi
    return module


EXT = _extension()
MEMBERS = EXT.tensor_members(PACKAGE)
RUNTIME = sorted(n for n in dir(lazytrain.Tensor) if not n.startswith("_"))


def _static(name):
    return inspect.getattr_static(lazytrain.Tensor, name)


def _code(obj):
    """The Python function behind a runtime member (None for a native one)."""
    if isinstance(obj, property):
        obj = obj.fget
    obj = inspect.unwrap(obj)
    return obj if inspect.isfunction(obj) else None


def _module_file(module_name):
    """The file of a module of the imported package (the installed wheel's in CI:
    the same sources as python/lazytrain, which the reference reads)."""
    rel = module_name.split(".")[1:]
    base = os.path.join(os.path.dirname(lazytrain.__file__), *rel)
    return os.path.join(base, "__init__.py") if os.path.isdir(base) else base + ".py"


def test_runtime_members_exist():
    # The comparison below is not vacuous: the class has its Python methods.
    assert len(RUNTIME) > 150
    for name in ("max", "sort", "tolist", "size", "clone", "add_", "zero_", "copy_", "register_hook", "grad_fn"):
        assert name in RUNTIME


def test_every_public_member_is_collected():
    collected = {n for n in MEMBERS if not n.startswith("_")}
    missing = [n for n in RUNTIME if n not in collected]
    extra = sorted(collected - set(RUNTIME))
    assert not missing, (
        f"lazytrain.Tensor has {missing} at runtime, but docs/_ext/lazytrain_autoapi.py's tensor_members() "
        "does not find them in python/lazytrain: they would be missing from the API reference. Attach them "
        "as the other modules do (Tensor.name = fn, setattr(Tensor, name, fn) in a loop over a tuple of "
        "names), or teach tensor_members() the new pattern.")
    assert not extra, f"tensor_members() finds {extra}, which lazytrain.Tensor does not have at runtime"


@pytest.mark.parametrize("name", RUNTIME)
def test_member_matches_runtime(name):
    member, obj = MEMBERS[name], _static(name)
    assert member.kind == ("property" if isinstance(obj, property) else "method"), name
    code = _code(obj)
    if code is None:  # native: nanobind's method or property, documented from _C.pyi
        assert member.source == "lazytrain._C", (name, member)
        return
    # The same code: the function or lambda the reader followed is the one attached.
    assert member.source, (name, member)
    assert os.path.realpath(code.__code__.co_filename) == os.path.realpath(_module_file(member.source)), (name, member)
    assert code.__code__.co_firstlineno == member.lineno, (name, member, code.__code__.co_firstlineno)
    if not isinstance(obj, property):
        params = list(inspect.signature(code).parameters.values())[1:]
        runtime = [("*" if p.kind == p.VAR_POSITIONAL else "**" if p.kind == p.VAR_KEYWORD else "") + p.name
                   for p in params]
        shown = [(prefix or "") + arg for prefix, arg, _, _ in member.args if arg]
        if member.forwarded:
            # def method(self, *args, **kwargs) passing them on: the reference shows the
            # signature of what it passes them to.
            assert all(r.startswith("*") for r in runtime), (name, runtime)
        else:
            assert shown == runtime, (name, shown, runtime)
    # Python's docstring, where the member has one at runtime, is the reference's.
    doc = obj.__doc__ if not isinstance(obj, property) else (obj.__doc__ or obj.fget.__doc__)
    if doc:
        assert member.doc == inspect.cleandoc(doc), name
    # Every member written in Python is documented (a docstring, a string after a
    # lambda's assignment, or the docstring of the function a lambda calls).
    assert member.doc, f"lazytrain.Tensor.{name} ({member.source}, line {member.lineno}) has no docstring"


def test_stubgen_omissions_match_the_extension():
    """The members _STUBGEN_OMITS adds (names nanobind's stubgen leaves out of
    _C.pyi) have the extension's own signatures."""
    for name, member in MEMBERS.items():
        if member.source != "lazytrain._C" or member.same_as is not None or name.startswith("_"):
            continue
        obj = _static(name)
        assert _code(obj) is None, name
        signature = obj.__doc__.splitlines()[0].replace("lazytrain._C.", "")
        shown = f"{name}(self, {EXT._format_args(member.args)})" if member.args else f"{name}(self)"
        shown += f" -> {member.returns}" if member.returns else ""
        assert signature == shown, (signature, shown)
