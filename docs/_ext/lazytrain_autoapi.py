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
  (``_show_reexports``), and gives each name that a public module re-exports
  from another public module (``lazytrain.Trainer``) a short entry
  that links to where it is documented (``_link_reexports``), so that the name
  users write is in the index and the search;
- adds to ``lazytrain.Tensor`` the methods and properties that lazytrain's
  Python modules attach to the class when the package is imported
  (``Tensor.max = ...``, ``setattr(Tensor, name, fn)``, loops over tuples of
  names): ``tensor_members`` finds them by reading those modules with ``ast``,
  in the order the package imports them, without importing anything
  (``_add_runtime_members``; tests/python/test_api_reference_complete.py
  compares what it finds with ``dir(lazytrain.Tensor)``);
- works around an autoapi 3.9 bug (``_drop_shadowed_imports``).

A reference that still resolves to nothing stays a warning (-n).
"""
import ast
import copy
import inspect
import os

# The kinds of object a name in a signature or a Bases: line can mean.
_TYPE_KINDS = ("class", "exception", "data", "function", "module", "package")


def _is_private(name):
    return name.startswith("_") and not name.endswith("__")


def _skip_member(app, what, name, obj, skip, options):
    if what in ("module", "package"):
        return name not in app.config.lazytrain_api_modules
    if what not in ("method", "property", "attribute") and obj.imported:
        # A name re-exported from another public module (lazytrain.Trainer from
        # lazytrain.trainer) is documented there.
        here = obj.id.rsplit(".", 1)[0]
        there = obj.obj["original_path"].rsplit(".", 1)[0]
        if there != here and there in app.config.lazytrain_api_modules:
            return None if "lazytrain_link" in obj.obj else True  # here a short entry (_link_reexports)
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
        _link_reexports(self.paths.values(), public)

    return wrapped


_LINK_KINDS = {"class": ("class", "class"), "exception": ("exc", "exception"), "function": ("func", "function"),
               "data": ("data", "object")}


def _link_reexports(modules, public):
    """A name that a public module imports from another public module
    (``lazytrain.Trainer``, from lazytrain.trainer) is documented there; here it
    gets a short entry, its summary a link to that one: the name users write is
    in the index and the search, and the page does not repeat the documentation.
    A class's members stay (hidden) so that references through this name
    (``lazytrain.Trainer.train``) still resolve; a function keeps its signature."""
    for module in modules:
        if module["name"] not in public:
            continue
        for child in module["children"]:
            original = child.get("original_path")
            there = original.rpartition(".")[0] if original else None
            if child["type"] not in _LINK_KINDS or there == module["name"] or there not in public:
                continue
            role, word = _LINK_KINDS[child["type"]]
            child["doc"] = f"The same {word} as :py:{role}:`{original}`, where it is documented."
            child["lazytrain_link"] = original
            if child["type"] in ("class", "exception"):
                child["bases"] = []
                child["children"] = [c for c in child["children"] if c["name"] != "__init__"]
                for member in child["children"]:
                    member["hide"] = True
                    if member["name"] == "__new__":
                        member["doc"] = ""  # else the class's entry shows it (autoapi_python_class_content)


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
    from docutils import nodes

    if isinstance(contnode, nodes.Text):
        return nodes.Text(text)
    clone = contnode.copy()  # its attributes, without its children
    clone += nodes.Text(text)
    return clone


def _missing_reference(app, env, node, contnode):
    from docutils import nodes

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


# ---------------------------------------------------------------------------------------------
# lazytrain.Tensor's members attached at import time, read statically
# ---------------------------------------------------------------------------------------------
# _C.pyi holds what the native extension binds on Tensor; lazytrain's Python
# modules attach the rest when the package is imported (_tensor.py's and
# _views.py's install functions, _reductions.py's loop over __all__, ...).
# tensor_members() finds those attachments without importing anything: a small
# interpreter follows lazytrain/__init__.py's imports in order and, in each module
# imported, runs the statements at its top level and the functions they call,
# understanding only what attaches members: `T.name = value` and
# `setattr(T, name, value)` for an alias T of Tensor, loops over tuples of names,
# `if hasattr(T, name)`, `globals()[name]`, factories that return a function
# (`_inplace("add_", _add)`), `functools.wraps`, `property(...)`, f-strings and
# `fn.__doc__ = ...`. What it cannot follow it leaves alone:
# tests/python/test_api_reference_complete.py then names the member (missing,
# or without its signature or docstring).

# Native members that nanobind's stubgen leaves out of _C.pyi (it takes a name
# with one trailing underscore for a private one), as the stub would have them.
# The test checks each against the extension's own signature.
_STUBGEN_OMITS = '''
class Tensor:
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """``torch.Tensor.requires_grad_``: sets requires_grad in place (a leaf
        starts or stops recording its gradient) and returns this tensor."""
'''

_TENSOR = ("lazytrain._C", "Tensor")


class Member:
    """A member of lazytrain.Tensor as the package leaves it after import.

    kind: "method", "property" or "attribute". args: the signature without self,
    as autoapi's ArgInfo tuples (prefix, name, annotation, default). source: the
    module whose code it is ("lazytrain._C" for the native ones), lineno: the
    first line of that code (None for native ones). same_as: the native member
    it is (an alias or a functools.wraps wrapper of it); args_from: the native
    member whose signature it takes (a method that forwards *args/**kwargs to
    it); forwarded: its args are those of the function it forwards to."""

    def __init__(self, name, kind, args=(), returns=None, doc="", source=None, lineno=None,
                 same_as=None, args_from=None, forwarded=False):
        self.name, self.kind, self.args, self.returns, self.doc = name, kind, list(args), returns, doc
        self.source, self.lineno = source, lineno
        self.same_as, self.args_from, self.forwarded = same_as, args_from, forwarded

    def renamed(self, name):
        clone = copy.copy(self)
        clone.name, clone.args = name, list(self.args)
        return clone

    def __repr__(self):
        return f"<Member {self.kind} {self.name}({_format_args(self.args)}) from {self.source}>"


def _format_args(args):
    out = []
    for prefix, name, annotation, default in args:
        text = (prefix or "") + (name or "") + (f": {annotation}" if annotation else "")
        if default is not None:
            text += f" = {default}" if annotation else f"={default}"
        out.append(text)
    return ", ".join(out)


# The values the interpreter knows.
class _Cls:  # lazytrain.Tensor itself
    pass


class _Self:  # the first parameter of a function being read for what it forwards to
    pass


class _Builtin:
    def __init__(self, name):
        self.name = name


class _Module:
    def __init__(self, name):
        self.name = name


class _Const:
    def __init__(self, value):
        self.value = value


class _Tuple:  # a tuple some of whose items are not constants
    def __init__(self, items):
        self.items = items


class _Fn:
    """A function or lambda of a module, with the values of the names its body
    reads from the functions around it; doc: set by `fn.__doc__ = ...`."""

    def __init__(self, module, node, env):
        self.module, self.node, self.env, self.doc = module, node, env, None


class _Ref:  # a member read from the class (T.transpose, getattr(T, name))
    def __init__(self, member):
        self.member = member


class _Prop:
    def __init__(self, fget, doc):
        self.fget, self.doc = fget, doc


class _Globals:  # globals() of a module
    def __init__(self, module):
        self.module = module


class _ClassDict:  # Tensor.__dict__
    pass


_BUILTINS = {name: _Builtin(name) for name in ("getattr", "setattr", "hasattr", "property", "globals")}


class _Source:
    """One module of the package: its syntax tree and its top-level names."""

    def __init__(self, package, name, path):
        self.package, self.name, self.path = package, name, path
        with open(path, encoding="utf-8") as f:
            self.tree = ast.parse(f.read(), path)
        self.is_package = os.path.basename(path).startswith("__init__.")
        self.env = {}  # names bound by its top-level statements run so far
        self.defs, self.assigns, self.imports = {}, {}, {}
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self.assigns[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.ImportFrom):
                base = self.absolute(stmt)
                for alias in stmt.names:
                    self.imports[alias.asname or alias.name] = (base, alias.name)

    def absolute(self, stmt):
        if not stmt.level:
            return stmt.module or ""
        parts = self.name.split(".")
        if not self.is_package:
            parts = parts[:-1]
        parts = parts[:len(parts) - (stmt.level - 1)]
        return ".".join(parts + ([stmt.module] if stmt.module else []))


class _Interpreter:
    def __init__(self, package_dir):
        self.package_dir = package_dir
        self.package = os.path.basename(os.path.normpath(package_dir))
        self.sources = {}
        self.ran = set()
        self.resolving = set()
        self.depth = 0
        self.members = {}
        self.attached = None  # names the statement being run attached (for a docstring after it)
        for tree, native in ((self.source(f"{self.package}._C").tree, True), (ast.parse(_STUBGEN_OMITS), False)):
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and node.name == _TENSOR[1]:
                    self._seed(node, native)

    # ---- modules
    def source(self, name):
        if name not in self.sources:
            rel = name.split(".")[1:] if name.split(".")[0] == self.package else None
            path = None
            if rel is not None:
                base = os.path.join(self.package_dir, *rel)
                for candidate in (os.path.join(base, "__init__.py"), base + ".py", base + ".pyi"):
                    if os.path.isfile(candidate):
                        path = candidate
                        break
            try:
                self.sources[name] = _Source(self.package, name, path) if path else None
            except (OSError, SyntaxError, UnicodeDecodeError):
                self.sources[name] = None
        return self.sources[name]

    def run(self, name):
        """Imports module `name` as Python would: its top-level statements, in order."""
        if name in self.ran:
            return
        self.ran.add(name)
        parent = name.rpartition(".")[0]
        if parent:
            self.run(parent)
        module = self.source(name)
        if module is None:
            return
        self.exec_block(module.tree.body, module, module.env, top=True)

    def lookup(self, module, name):
        if name in module.env:
            return module.env[name]
        key = (module.name, name)
        if key in self.resolving:
            return None
        self.resolving.add(key)
        try:
            if name in module.defs:
                node = module.defs[name]
                if isinstance(node, ast.ClassDef):
                    return _Cls() if (module.name, name) == _TENSOR else None
                return self.decorated(_Fn(module, node, {}), node)
            if name in module.assigns:
                return self.eval(module.assigns[name], module, {})
            if name in module.imports:
                base, attr = module.imports[name]
                sub = self.source(f"{base}.{attr}") if base else None
                if sub is not None:
                    return _Module(sub.name)
                origin = self.source(base)
                return self.lookup(origin, attr) if origin is not None else None
            return _BUILTINS.get(name)
        finally:
            self.resolving.discard(key)

    def decorated(self, fn, node):
        """A module-level function as its decorators leave it (a decorator that is
        a function of the package's and returns a function); else the function."""
        value = fn
        for decorator in reversed(node.decorator_list):
            d = self.eval(decorator, fn.module, {})
            result = self.call(d, [value], {}) if isinstance(d, _Fn) else None
            if not isinstance(result, _Fn):
                return fn
            value = result
        return value

    # ---- expressions
    def eval(self, node, module, env):
        self.depth += 1
        try:
            if self.depth > 40:
                return None
            return self._eval(node, module, env)
        finally:
            self.depth -= 1

    def _eval(self, node, module, env):
        if isinstance(node, ast.Constant):
            return _Const(node.value)
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self.eval(e, module, env) for e in node.elts]
            if all(isinstance(i, _Const) for i in items):
                return _Const(tuple(i.value for i in items))
            return _Tuple(items)
        if isinstance(node, ast.Name):
            return env[node.id] if node.id in env else self.lookup(module, node.id)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.eval(node.value, module, env), node.attr)
        if isinstance(node, ast.Subscript):
            base, key = self.eval(node.value, module, env), self.eval(node.slice, module, env)
            if not isinstance(key, _Const) or not isinstance(key.value, str):
                return None
            if isinstance(base, _Globals):
                return self.lookup(base.module, key.value)
            if isinstance(base, _ClassDict):  # T.__dict__["data"]
                member = self.members.get(key.value)
                return _Ref(member) if member else None
            return None
        if isinstance(node, (ast.BinOp, ast.Compare, ast.UnaryOp, ast.BoolOp)):
            return self.operator(node, module, env)
        if isinstance(node, ast.JoinedStr):
            text = ""
            for part in node.values:
                if isinstance(part, ast.Constant):
                    text += str(part.value)
                    continue
                value = self.eval(part.value, module, env)
                if not isinstance(value, _Const) or part.format_spec is not None:
                    return None
                text += repr(value.value) if part.conversion == ord("r") else str(value.value)
            return _Const(text)
        if isinstance(node, ast.Lambda):
            return _Fn(module, node, env)
        if isinstance(node, ast.Call):
            func = self.eval(node.func, module, env)
            args = [self.eval(a, module, env) for a in node.args if not isinstance(a, ast.Starred)]
            if any(isinstance(a, ast.Starred) for a in node.args):
                return None
            kwargs = {k.arg: self.eval(k.value, module, env) for k in node.keywords if k.arg}
            if isinstance(func, _Builtin):
                return self.builtin(func.name, args, kwargs, module)
            if isinstance(func, _Fn):
                return self.call(func, args, kwargs)
        return None

    def attribute(self, base, attr):
        if isinstance(base, _Cls):
            if attr == "__dict__":
                return _ClassDict()
            member = self.members.get(attr)
            return _Ref(member) if member else None
        if isinstance(base, _Module):
            module = self.source(base.name)
            return self.lookup(module, attr) if module is not None else None
        if isinstance(base, _Fn):
            if attr == "__doc__":
                return _Const(self.fn_doc(base))
            if attr == "__name__":
                return _Const(getattr(base.node, "name", "<lambda>"))
        if isinstance(base, _Ref) and attr == "__doc__":
            return _Const(base.member.doc)
        return None

    def operator(self, node, module, env):
        import operator as op

        def const(n):
            v = self.eval(n, module, env)
            if not isinstance(v, _Const):
                raise LookupError
            return v.value

        try:
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                return _Const(const(node.left) + const(node.right))
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                return _Const(not const(node.operand))
            if isinstance(node, ast.BoolOp):
                values = [const(v) for v in node.values]
                return _Const(all(values) if isinstance(node.op, ast.And) else any(values))
            if isinstance(node, ast.Compare) and len(node.ops) == 1:
                compare = {ast.Eq: op.eq, ast.NotEq: op.ne, ast.Is: op.is_, ast.IsNot: op.is_not,
                           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}.get(type(node.ops[0]))
                if compare is not None:
                    return _Const(compare(const(node.left), const(node.comparators[0])))
        except (LookupError, TypeError):
            pass
        return None

    def builtin(self, name, args, kwargs, module):
        if name == "globals":
            return _Globals(module)
        if name in ("getattr", "hasattr") and len(args) >= 2 and isinstance(args[1], _Const):
            obj, attr = args[0], args[1].value
            if name == "hasattr":
                return _Const(attr in self.members) if isinstance(obj, _Cls) else None
            if isinstance(obj, (_Cls, _Self)):
                member = self.members.get(attr)
                return _Ref(member) if member else None
            return self.attribute(obj, attr)
        if name == "property":
            fget = args[0] if args else kwargs.get("fget")
            doc = args[3] if len(args) > 3 else kwargs.get("doc")
            return _Prop(fget, doc.value if isinstance(doc, _Const) and isinstance(doc.value, str) else None)
        return None

    def call(self, fn, args, kwargs):
        """The value a function of the package's returns (its body run)."""
        if not isinstance(fn.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        env = dict(fn.env)
        env.update(self.bind(fn, args, kwargs))
        returned = self.exec_block(fn.node.body, fn.module, env)
        return returned[0] if returned else None

    def bind(self, fn, args, kwargs):
        a = fn.node.args
        positional = a.posonlyargs + a.args
        defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        env = {}
        for i, p in enumerate(positional):
            if i < len(args):
                env[p.arg] = args[i]
            elif p.arg in kwargs:
                env[p.arg] = kwargs[p.arg]
            else:
                env[p.arg] = self.eval(defaults[i], fn.module, fn.env) if defaults[i] is not None else None
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            env[p.arg] = kwargs[p.arg] if p.arg in kwargs else (self.eval(d, fn.module, fn.env) if d else None)
        if a.vararg:
            env[a.vararg.arg] = None
        if a.kwarg:
            env[a.kwarg.arg] = None
        return env

    # ---- statements
    def exec_block(self, stmts, module, env, top=False):
        """Runs statements; (value,) when one returns."""
        for stmt in stmts:
            attached, self.attached = self.attached, None
            if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str) and attached):
                # A string after an attachment: that member's docstring.
                for name in attached:
                    self.members[name].doc = inspect.cleandoc(stmt.value.value)
                continue
            returned = self.exec_stmt(stmt, module, env, top)
            if returned:
                return returned
        return None

    def exec_stmt(self, stmt, module, env, top):
        if isinstance(stmt, ast.ImportFrom):
            base = module.absolute(stmt)
            if base.split(".")[0] == self.package:
                self.run(base)
                for alias in stmt.names:
                    if self.source(f"{base}.{alias.name}") is not None:
                        self.run(f"{base}.{alias.name}")
            return None
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if top:
                return None  # read where it is used (lookup)
            value = _Fn(module, stmt, env)
            for decorator in stmt.decorator_list:
                if (isinstance(decorator, ast.Call) and decorator.args and
                        (getattr(decorator.func, "attr", None) == "wraps" or getattr(decorator.func, "id", None) == "wraps")):
                    value = self.eval(decorator.args[0], module, env)  # functools.wraps: it passes for the original
            env[stmt.name] = value
            return None
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, module, env)
            for target in stmt.targets:
                self.assign(target, value, module, env)
            return None
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            func = self.eval(call.func, module, env)
            if isinstance(func, _Builtin) and func.name == "setattr" and len(call.args) == 3:
                obj, name = self.eval(call.args[0], module, env), self.eval(call.args[1], module, env)
                if isinstance(obj, _Cls) and isinstance(name, _Const):
                    self.attach(name.value, self.eval(call.args[2], module, env))
            elif isinstance(func, _Fn):
                self.eval(call, module, env)
            return None
        if isinstance(stmt, ast.For):
            items = self.eval(stmt.iter, module, env)
            if isinstance(items, _Const) and isinstance(items.value, (tuple, list)):
                items = [_Const(v) for v in items.value]
            elif isinstance(items, _Tuple):
                items = items.items
            else:
                return None
            for item in items:
                self.assign(stmt.target, item, module, env)
                returned = self.exec_block(stmt.body, module, env)
                if returned:
                    return returned
            return None
        if isinstance(stmt, ast.If):
            test = self.eval(stmt.test, module, env)
            if isinstance(test, _Const):
                return self.exec_block(stmt.body if test.value else stmt.orelse, module, env)
            return None
        if isinstance(stmt, ast.Return):
            return (self.eval(stmt.value, module, env) if stmt.value else _Const(None),)
        return None

    def assign(self, target, value, module, env):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = (value.items if isinstance(value, _Tuple) else
                     [_Const(v) for v in value.value] if isinstance(value, _Const) and isinstance(value.value, tuple)
                     else [None] * len(target.elts))
            for t, v in zip(target.elts, items):
                self.assign(t, v, module, env)
        elif isinstance(target, ast.Attribute):
            base = self.eval(target.value, module, env)
            if isinstance(base, _Cls):
                self.attach(target.attr, value)
            elif target.attr == "__doc__" and isinstance(value, _Const) and isinstance(value.value, str):
                if isinstance(base, _Ref):
                    base.member.doc = inspect.cleandoc(value.value)
                elif isinstance(base, _Fn):
                    base.doc = value.value

    # ---- members
    def _seed(self, cls, native):
        """The members of the stub's class Tensor."""
        for node in cls.body:
            if not isinstance(node, ast.FunctionDef) or node.name in self.members:
                continue  # a later @overload of a method, or a property's setter
            decorators = {ast.unparse(d) for d in node.decorator_list}
            kind = "property" if "property" in decorators else "method"
            self.members[node.name] = Member(
                node.name, kind, [] if kind == "property" else _args(node.args),
                ast.unparse(node.returns) if node.returns else None, ast.get_docstring(node) or "",
                source=f"{self.package}._C", same_as=node.name if native else None)

    def attach(self, name, value):
        old = self.members.get(name)
        if isinstance(value, _Ref):
            member = value.member.renamed(name)
        elif isinstance(value, _Fn):
            member = self.method(name, value)
        elif isinstance(value, _Prop):
            fget = value.fget if isinstance(value.fget, _Fn) else None
            returns = fget.node.returns if fget is not None and isinstance(fget.node, ast.FunctionDef) else None
            member = Member(name, "property", returns=ast.unparse(returns) if returns else (old.returns if old else None),
                            doc=inspect.cleandoc(value.doc) if value.doc else (self.fn_doc(fget) if fget else ""),
                            source=fget.module.name if fget else None, lineno=_first_line(fget.node) if fget else None)
        elif isinstance(value, _Const):
            member = Member(name, "attribute", doc="", source=None)
        else:
            member = Member(name, "method", doc="", source=None)  # not understood: the test names it
        if not member.doc and old is not None and old.doc:
            member.doc = old.doc  # a replacement without a docstring keeps the one it replaces
        self.members[name] = member
        self.attached = (self.attached or []) + [name]

    def method(self, name, fn):
        args, args_from, forwarded = self.signature(fn)
        returns = fn.node.returns if isinstance(fn.node, ast.FunctionDef) else None
        return Member(name, "method", args, ast.unparse(returns) if returns else None, self.fn_doc(fn),
                      source=fn.module.name, lineno=_first_line(fn.node), args_from=args_from, forwarded=forwarded)

    def fn_doc(self, fn):
        """Its docstring (or the __doc__ assigned to it); for a lambda or function
        whose body is a call of a documented function with its first parameter
        first (``lambda self, dim: index_add(self, dim)``), that function's."""
        if fn.doc is not None:
            return inspect.cleandoc(fn.doc)
        if isinstance(fn.node, ast.FunctionDef) and ast.get_docstring(fn.node):
            return ast.get_docstring(fn.node)
        body = fn.node.body
        if isinstance(body, list):
            body = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
        params = fn.node.args.posonlyargs + fn.node.args.args
        if (isinstance(body, ast.Call) and params and body.args and isinstance(body.args[0], ast.Name)
                and body.args[0].id == params[0].arg):
            env = dict(fn.env)
            env.update({p.arg: None for p in params})
            callee = self.eval(body.func, fn.module, env)
            if isinstance(callee, _Fn) and callee is not fn:
                return self.fn_doc(callee)
            if isinstance(callee, _Ref):
                return callee.member.doc
        return ""

    def signature(self, fn, depth=0):
        """(args without the first parameter, the native member they are from,
        whether they are forwarded). A function that only passes *args and
        **kwargs on (``def method(self, *args, **kwargs): ... compute(x, *args,
        **kwargs)``) has the signature of what it passes them to."""
        a = fn.node.args
        positional = a.posonlyargs + a.args
        if (depth < 8 and len(positional) == 1 and not a.kwonlyargs and (a.vararg or a.kwarg)):
            nodes = [fn.node.body] if isinstance(fn.node, ast.Lambda) else fn.node.body
            for call in (n for root in nodes for n in ast.walk(root) if isinstance(n, ast.Call)):
                starred = [i for i, x in enumerate(call.args)
                           if isinstance(x, ast.Starred) and isinstance(x.value, ast.Name) and a.vararg
                           and x.value.id == a.vararg.arg]
                double = [k for k in call.keywords
                          if k.arg is None and isinstance(k.value, ast.Name) and a.kwarg and k.value.id == a.kwarg.arg]
                if (a.vararg and not starred) or (a.kwarg and not double):
                    continue
                before = starred[0] if starred else len(call.args)
                env = dict(fn.env)
                env[positional[0].arg] = _Self()
                target = self.eval(call.func, fn.module, env)
                if isinstance(target, _Ref) and before == 0:
                    m = target.member
                    return m.args, m.same_as or m.args_from, True
                if isinstance(target, _Fn) and before == 1:
                    args, args_from, _ = self.signature(target, depth + 1)
                    return args, args_from, True
        return _args(a), None, False


def _first_line(node):
    """The line a function's code object starts at (its first decorator's)."""
    lines = [node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]
    return min(lines)


def _args(a):
    """autoapi's ArgInfo tuples for ast.arguments, without the first parameter (self)."""
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    text = lambda n: ast.unparse(n) if n is not None else None  # noqa: E731
    out = []
    for i, p in enumerate(positional):
        if i == 0:
            continue
        out.append((None, p.arg, text(p.annotation), text(defaults[i])))
        if i == len(a.posonlyargs) - 1:
            out.append(("/", None, None, None))
    if a.vararg:
        out.append(("*", a.vararg.arg, text(a.vararg.annotation), None))
    elif a.kwonlyargs:
        out.append(("*", None, None, None))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((None, p.arg, text(p.annotation), text(d)))
    if a.kwarg:
        out.append(("**", a.kwarg.arg, text(a.kwarg.annotation), None))
    return out


def tensor_members(package_dir):
    """{name: Member} for every member of lazytrain.Tensor once the package at
    `package_dir` (python/lazytrain) is imported: the stub's, then those its
    modules attach, in import order. Reads files only."""
    interpreter = _Interpreter(package_dir)
    interpreter.run(interpreter.package)
    return interpreter.members


def _add_runtime_members(resolve):
    """Before autoapi copies lazytrain._C.Tensor to lazytrain.Tensor (the import in
    lazytrain/__init__.py), the members tensor_members() finds join the class:
    those the stub lacks, and those the package replaces (Tensor.to, backward)."""

    def wrapped(self):
        for module in self.paths.values():
            if module["name"] != _TENSOR[0]:
                continue
            for cls in module["children"]:
                if cls["type"] == "class" and cls["name"] == _TENSOR[1]:
                    _add_members(cls, tensor_members(os.path.dirname(module["file_path"])))
        return resolve(self)

    return wrapped


def _add_members(cls, members):
    from autoapi._parser import _prepare_docstring

    children = {c["name"]: c for c in cls["children"]}
    for m in members.values():
        if m.name.startswith("_") or m.kind == "attribute":
            continue
        if m.same_as == m.name and m.name in children:
            continue  # the stub's own (perhaps wrapped with functools.wraps)
        if m.same_as in children:  # an alias: T.swapaxes = T.transpose
            data = copy.deepcopy(children[m.same_as])
            data.update(name=m.name, doc=_prepare_docstring(m.doc or f"Another name for :py:meth:`.{m.same_as}`."))
        else:
            data = {"type": m.kind, "args": m.args, "type_params": [], "doc": _prepare_docstring(m.doc),
                    "return_annotation": m.returns, "properties": [], "is_overload": False, "overloads": []}
            origin = children.get(m.args_from)
            if origin is not None and m.kind == "method":  # the stub's signature, as autoapi read it
                data["args"] = copy.deepcopy(origin["args"])
                data["overloads"] = [(copy.deepcopy(args), None) for args, _ in origin.get("overloads", [])]
        data.update(name=m.name, qual_name=f"{cls['qual_name']}.{m.name}", full_name=f"{cls['full_name']}.{m.name}")
        data.pop("from_line_no", None)
        data.pop("to_line_no", None)
        if m.name in children:
            cls["children"][cls["children"].index(children[m.name])] = data
        else:
            cls["children"].append(data)
        children[m.name] = data


def setup(app):
    app.add_config_value("lazytrain_api_modules", set(), "env")
    import autoapi._mapper

    autoapi._mapper.Mapper._resolve_placeholders = _drop_shadowed_imports(_add_runtime_members(
        autoapi._mapper.Mapper._resolve_placeholders))
    autoapi._mapper.Mapper._hide_yo_kids = _show_reexports(autoapi._mapper.Mapper._hide_yo_kids)
    app.connect("autoapi-skip-member", _skip_member)
    app.connect("env-before-read-docs", _reset)
    app.connect("missing-reference", _missing_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
