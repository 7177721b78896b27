"""Sphinx extension: the API reference's pages are the modules users import.

sphinx-autoapi reads every module of python/lazytrain (and the committed stub
_C.pyi) statically. This extension, configured by conf.py's
``lazytrain_api_modules``:

- gives a page only to the public modules listed there; private modules and
  implementation modules (lazytrain.nn.layers, lazytrain.models.bert) are read
  for their names but get no page: their names show where users import them
  (lazytrain.nn.Linear, lazytrain.models.BertModel, lazytrain.Tensor); a name
  that one public module re-exports from another (lazytrain.Trainer) is
  documented in the latter only;
- shows on a public class the members it inherits from a private base
  (``BertForMaskedLM.forward`` from ``_MaskedLM``), which has no page;
- resolves the references autoapi writes to where an object is defined
  (``Bases: lazytrain.nn.module.Module``, ``lazytrain._C.Tensor`` in a
  signature) to the page where it is documented (lazytrain.nn.Module,
  lazytrain.Tensor); a private base class is shown as its public bases, and
  any other object of lazytrain's that has no page as its name, unlinked;
- shows the names a public module re-exports from a module without a page
  (``_show_reexports``), and works around an autoapi 3.9 bug
  (``_drop_shadowed_imports``).

A reference that still resolves to nothing stays a warning (-n).
"""
import autoapi._mapper
from docutils import nodes

# The kinds of object a name in a signature or a Bases: line can mean.
_TYPE_KINDS = ("class", "exception", "data", "function", "module", "package")


def _is_private(name):
    return name.startswith("_") and not name.endswith("__")


def _skip_member(app, what, name, obj, skip, options):
    if what in ("module", "package"):
        return name not in app.config.lazytrain_api_modules
    if what not in ("method", "property", "attribute") and obj.imported:
        # A name re-exported from another public module (lazytrain.Trainer from
        # lazytrain.trainer) is documented there only.
        here = obj.id.rsplit(".", 1)[0]
        there = obj.obj["original_path"].rsplit(".", 1)[0]
        if there != here and there in app.config.lazytrain_api_modules:
            return True
    if getattr(obj, "inherited", False):
        # Inherited members show only when inherited from a private class:
        # that class has no page, so its public members belong to the subclass.
        base = obj.obj["inherited_from"]["full_name"].rsplit(".", 1)[-1]
        return skip or not _is_private(base)
    return None  # autoapi's own rule: private names, __all__, undocumented


def _drop_shadowed_imports(resolve):
    """autoapi 3.9 resolves only the last of two imports that bind one name in a
    module (``from ._C import amax`` then ``from ._reductions import amax`` in
    lazytrain/__init__.py) and warns "Unknown type: placeholder" for the first,
    a warning without a type that suppress_warnings cannot name. Python binds
    the name to the last import, so the earlier ones are dropped first."""

    def wrapped(self):
        for module in self.paths.values():
            children = module["children"]
            last = {child["name"]: i for i, child in enumerate(children)}
            module["children"] = [c for i, c in enumerate(children)
                                  if c["type"] != "placeholder" or last[c["name"]] == i]
        return resolve(self)

    return wrapped


def _show_reexports(hide):
    """autoapi hides what a module (not a package) imports unless __all__ names
    it; a public module's names imported from a module without a page
    (lazytrain.nn.functional.relu from _C) are shown: that is where users find them."""

    def wrapped(self):
        hide(self)
        public = self.app.config.lazytrain_api_modules
        for module in self.paths.values():
            if module["type"] != "module" or module["all"] is not None or module["name"] not in public:
                continue
            for child in module["children"]:
                source = child.get("original_path", "").rpartition(".")[0]
                if source and source not in public:
                    child["hide"] = False

    return wrapped


class _Names:
    """Where each of autoapi's objects is defined and where it is documented."""

    def __init__(self, env):
        self.objects = getattr(env, "autoapi_all_objects", {})
        documented = env.domains.python_domain.objects
        self.public = {}  # canonical name -> documented names
        for name in documented:
            if name in self.objects:
                self.public.setdefault(self.canonical(name), []).append(name)

    def canonical(self, name):
        """The name where the object is defined (imports followed)."""
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            obj = self.objects.get(".".join(parts[:i]))
            original = obj.obj.get("original_path") if obj is not None else None
            if original:
                return self.canonical(".".join([original] + parts[i:]))
        return name

    def find(self, target, module, klass):
        """The canonical name that `target`, written in `module` (and class
        `klass`), means; None if it names nothing of lazytrain's."""
        scopes = [s for s in (f"{module}.{klass}" if module and klass else None, module) if s]
        for full in [target] + [f"{s}.{target}" for s in scopes]:
            if full in self.objects:
                return self.canonical(full)
        # autoapi leaves a name local to the module that defines the referring
        # object unqualified (a base class: `_MaskedLM`), and resolves an
        # annotation in the scope of its function (`softmax.dtype` for
        # softmax(..., dtype: dtype), where the parameter shadows the class):
        # look the name up from where that object is defined, outwards.
        parts = target.split(".")
        for scope in scopes:
            for k in range(len(parts) - 1, -1, -1):
                context = ".".join([scope] + parts[:k])
                if context not in self.objects:
                    continue
                outer = self.canonical(context).split(".")
                for i in range(len(outer), 0, -1):
                    full = ".".join(outer[:i] + parts[k:])
                    obj = self.objects.get(full)
                    if obj is not None and obj.type in _TYPE_KINDS:
                        return self.canonical(full)
        return None

    def documented(self, canonical):
        """The documented name of a canonical name: the one in the public
        module nearest to where it is defined (lazytrain.models.PreTrainedModel
        rather than lazytrain.PreTrainedModel)."""
        names = self.public.get(canonical)
        if not names:
            return None
        source = canonical.split(".")

        def shared(name):
            n = 0
            for a, b in zip(name.split("."), source):
                if a != b:
                    break
                n += 1
            return (n, -len(name))

        return max(names, key=shared)


def _names(app, env):
    names = getattr(app, "_lazytrain_api_names", None)
    if names is None:
        names = app._lazytrain_api_names = _Names(env)
    return names


def _with_text(contnode, text):
    if isinstance(contnode, nodes.Text):
        return nodes.Text(text)
    copy = contnode.copy()  # its attributes, without its children
    copy += nodes.Text(text)
    return copy


def _missing_reference(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    names = _names(app, env)
    canonical = names.find(node["reftarget"], node.get("py:module"), node.get("py:class"))
    if canonical is None:
        return None
    domain = env.domains.python_domain
    documented = names.documented(canonical)
    if documented is not None:
        if contnode.astext() == node["reftarget"]:  # written as the target: show the documented name
            contnode = _with_text(contnode, documented)
        return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                   documented, node, contnode)
    obj = names.objects.get(canonical)
    if obj is None:
        return None
    in_bases = node.parent is not None and node.parent.astext().startswith("Bases:")
    if in_bases and obj.type in ("class", "exception") and _is_private(obj.name):
        # A private base class (no page): its bases, resolved where it is defined.
        module = canonical.rsplit(".", 1)[0]
        result = nodes.inline()
        for base in obj.bases or ["object"]:
            if result.children:
                result += nodes.Text(", ")
            base_canonical = names.find(base, module, None)
            base_documented = base_canonical and names.documented(base_canonical)
            text = nodes.literal(base_documented or base, base_documented or base)
            ref = base_documented and domain.resolve_xref(
                env, node["refdoc"], app.builder, "class", base_documented, node, text)
            if not ref and base != "object":
                return None  # a private base of a private base: let -n report it
            result += ref or text
        return result
    # An object of lazytrain's that has no page (lazytrain._C.device, the class
    # of what lazytrain.device() returns): its name, without a link.
    return _with_text(contnode, obj.name)


def _reset(app, env, docnames):
    app._lazytrain_api_names = None  # built again once the pages are read


def setup(app):
    app.add_config_value("lazytrain_api_modules", set(), "env")
    autoapi._mapper.Mapper._resolve_placeholders = _drop_shadowed_imports(
        autoapi._mapper.Mapper._resolve_placeholders)
    autoapi._mapper.Mapper._hide_yo_kids = _show_reexports(autoapi._mapper.Mapper._hide_yo_kids)
    app.connect("autoapi-skip-member", _skip_member)
    app.connect("env-before-read-docs", _reset)
    app.connect("missing-reference", _missing_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
