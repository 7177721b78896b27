"""Which `lazytrain.x.y` names exist, read statically from python/lazytrain.

No import of lazytrain (the docs build needs neither the native core nor
torch): each module's source is parsed with `ast`, and a name exists when the
module defines it, imports or re-exports it, is a package holding a submodule
of that name, or the name is defined in python/lazytrain/_C.pyi (the native
module's stubs). A module whose names cannot be listed statically (a module
`__getattr__`, a star import from outside the package, writes to `globals()`,
or `lazytrain._C` without its stubs) accepts every name: no false alarms.

check_python_block() finds, in a docs page's Python code, the lazytrain names
it uses: `import lazytrain.x.y`, `from lazytrain.x import a, b`, and attribute
chains on an imported module (`lt.optim.AdamW`, `lt.nn.functional.gelu`).
"""
import ast
import os
import re

ANY = "any"  # a module whose names cannot be listed: every name exists
OBJECT = "object"  # a name that is not a module: its attributes are not checked


class _Module:
    def __init__(self, names, is_open, package):
        self.names = names  # name -> "module:<dotted>" or OBJECT
        self.is_open = is_open
        self.package = package


class PackageIndex:
    """The modules and names of the package under `root` (python/lazytrain)."""

    def __init__(self, root, package="lazytrain"):
        self.root = root
        self.package = package
        self._modules = {}
        self.stub_names = self._stub_names()

    # -- files --------------------------------------------------------------
    def _files(self, dotted):
        """(file, is_package) of a dotted module of the package, or (None, False)."""
        parts = self.resolve_alias(dotted).split(".")
        if parts[0] != self.package:
            return None, False
        base = os.path.join(self.root, *parts[1:])
        for path, is_package in ((os.path.join(base, "__init__.py"), True), (os.path.join(base, "__init__.pyi"), True),
                                 (base + ".py", False), (base + ".pyi", False)):
            if os.path.isfile(path):
                return path, is_package
        return None, False

    def resolve_alias(self, dotted):
        """lazytrain.torch_xla.<m> is lazytrain.<m> (python/lazytrain/torch_xla's import alias)."""
        alias = f"{self.package}.torch_xla."
        if dotted.startswith(alias) and not self._is_file_under_alias(dotted):
            return f"{self.package}." + dotted[len(alias):]
        return dotted

    def _is_file_under_alias(self, dotted):
        base = os.path.join(self.root, *dotted.split(".")[1:])
        return os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py"))

    def is_module(self, dotted):
        if dotted == f"{self.package}._C":
            return True  # the native extension (built, not in the sources)
        return self._files(dotted)[0] is not None

    def _submodules(self, dotted):
        base = os.path.join(self.root, *self.resolve_alias(dotted).split(".")[1:])
        out = set()
        if not os.path.isdir(base):
            return out
        for entry in os.listdir(base):
            full = os.path.join(base, entry)
            stem, ext = os.path.splitext(entry)
            if ext in (".py", ".pyi") and stem != "__init__" and stem.isidentifier():
                out.add(stem)
            elif os.path.isdir(full) and entry.isidentifier() and (
                    os.path.isfile(os.path.join(full, "__init__.py")) or os.path.isfile(os.path.join(full, "__init__.pyi"))):
                out.add(entry)
        return out

    def _stub_names(self):
        """Every name _C.pyi defines (module level and in its classes)."""
        path = os.path.join(self.root, "_C.pyi")
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
        return names

    # -- one module's names -------------------------------------------------
    def module(self, dotted):
        if dotted not in self._modules:
            self._modules[dotted] = self._read(dotted)
        return self._modules[dotted]

    def _read(self, dotted):
        path, is_package = self._files(dotted)
        if path is None:
            # lazytrain._C without stubs: its names cannot be listed.
            return _Module({}, True, False)
        with open(path, encoding="utf-8") as f:
            try:
                tree = ast.parse(f.read(), path)
            except SyntaxError:
                return _Module({}, True, is_package)
        names = {}
        is_open = False
        package = dotted if is_package else dotted.rpartition(".")[0]

        def absolute(module, level):
            if level == 0:
                return module or ""
            base = package.split(".")
            if level > 1:
                base = base[:-(level - 1)]
            return ".".join(base + ([module] if module else []))

        def bind(name, target):
            names[name] = target

        def visit(body):
            nonlocal is_open
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    bind(node.name, OBJECT)
                    if node.name == "__getattr__":
                        is_open = True
                elif isinstance(node, ast.ClassDef):
                    bind(node.name, OBJECT)
                elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        for n in ast.walk(target):
                            if isinstance(n, ast.Name):
                                bind(n.id, OBJECT)
                            elif isinstance(n, ast.Subscript) and _is_globals_call(n.value):
                                is_open = True
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.asname:
                            bind(alias.asname, f"module:{alias.name}" if self.is_module(alias.name) else OBJECT)
                        else:
                            top = alias.name.split(".")[0]
                            bind(top, f"module:{top}" if self.is_module(top) else OBJECT)
                elif isinstance(node, ast.ImportFrom):
                    source = absolute(node.module, node.level)
                    for alias in node.names:
                        if alias.name == "*":
                            if source.split(".")[0] == self.package and self.is_module(source):
                                star = self.module(source) if source != dotted else _Module({}, False, False)
                                is_open = is_open or star.is_open
                                for n, t in star.names.items():
                                    if not n.startswith("_"):
                                        bind(n, t)
                            else:
                                is_open = True
                            continue
                        full = f"{source}.{alias.name}"
                        bind(alias.asname or alias.name, f"module:{full}" if self.is_module(full) else OBJECT)
                elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _updates_globals(node.value):
                    is_open = True
                # Definitions under if/try/with/for at module level count too.
                for field in ("body", "orelse", "finalbody"):
                    sub = getattr(node, field, None)
                    if isinstance(sub, list) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        visit(sub)
                for handler in getattr(node, "handlers", []) or []:
                    visit(handler.body)

        visit(tree.body)
        if is_package:
            for sub in self._submodules(dotted):
                names.setdefault(sub, f"module:{dotted}.{sub}")
        return _Module(names, is_open, is_package)

    # -- chains -------------------------------------------------------------
    def lookup(self, module, name):
        """What `module.name` is: "module:<dotted>", OBJECT, ANY (cannot tell), or None (missing)."""
        m = self.module(module)
        if name in m.names:
            return m.names[name]
        if self.is_module(f"{module}.{name}"):
            return f"module:{module}.{name}"
        if m.is_open:
            return ANY
        if self.stub_names and name in self.stub_names:
            return OBJECT
        return None

    def check_chain(self, module, attrs):
        """None when `module.attrs[0].attrs[1]...` exists as far as can be told, else a message."""
        current = module
        for i, name in enumerate(attrs):
            found = self.lookup(current, name)
            if found is None:
                return f"{current} has no name '{name}' (in {self.package}'s sources)"
            if not found.startswith("module:"):
                return None  # a class, function or value: its attributes are not checked
            current = found[len("module:"):]
            if current.split(".")[0] != self.package:
                return None  # a module of another package (os, numpy)
        return None


def _is_globals_call(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("globals", "vars")


def _updates_globals(call):
    # globals().update(...), setattr(sys.modules[__name__], ...)
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr == "update" and _is_globals_call(f.value):
        return True
    if isinstance(f, ast.Name) and f.id == "setattr" and call.args and "sys.modules" in ast.unparse(call.args[0]):
        return True
    return False


# -- the code of a page ------------------------------------------------------

_PROMPT = re.compile(r"^(>>>|\.\.\.)( |$)")


def _parse(code):
    """The block's AST, after removing doctest prompts and `…` placeholders; None when it is no Python."""
    lines = code.split("\n")
    if any(_PROMPT.match(line) for line in lines):
        lines = [_PROMPT.sub("", line) if _PROMPT.match(line) else "" for line in lines]
    text = "\n".join(lines).replace("…", "...")
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _chain(node):
    """(base name, [attr, ...]) of an attribute chain `a.b.c`, or None."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and attrs:
        return node.id, list(reversed(attrs))
    return None


def check_python_block(index, code, aliases, first_line=1):
    """Problems [(line, message)] of one Python block; `aliases` (name -> dotted module)
    carries a page's imports from block to block and is updated."""
    tree = _parse(code)
    if tree is None:
        return _check_lines(index, code, aliases, first_line)
    problems = []
    pkg = index.package

    def report(node, message):
        problems.append((first_line + node.lineno - 1, message))

    def visit(node):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != pkg:
                    continue
                parts = alias.name.split(".")
                if not index.is_module(alias.name):
                    message = index.check_chain(pkg, parts[1:]) or f"no module {alias.name}"
                    report(node, f"import {alias.name}: {message}")
                    continue
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases[pkg] = pkg
            return
        if isinstance(node, ast.ImportFrom):
            if node.level or not node.module or node.module.split(".")[0] != pkg:
                return
            if not index.is_module(node.module):
                message = index.check_chain(pkg, node.module.split(".")[1:]) or f"no module {node.module}"
                report(node, f"from {node.module} import ...: {message}")
                return
            for alias in node.names:
                if alias.name == "*":
                    continue
                message = index.check_chain(node.module, [alias.name])
                if message:
                    report(node, f"from {node.module} import {alias.name}: {message}")
                full = f"{node.module}.{alias.name}"
                if index.is_module(full):
                    aliases[alias.asname or alias.name] = full
                else:
                    aliases.pop(alias.asname or alias.name, None)
            return
        if isinstance(node, ast.Attribute):
            chain = _chain(node)
            if chain and chain[0] in aliases:
                base, attrs = chain
                message = index.check_chain(aliases[base], attrs)
                if message:
                    report(node, f"{base}.{'.'.join(attrs)}: {message}")
                return  # the chain's inner attributes are part of it
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            # `lt = ...` rebinds the name: no longer the module.
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    aliases.pop(t.id, None)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in tree.body:
        visit(statement)
    return problems


_IMPORT = re.compile(r"^import\s+[\w.]+(?:\s+as\s+\w+)?")
_FROM = re.compile(r"^from\s+[\w.]+\s+import\s+\(?\s*\w+(?:\s+as\s+\w+)?(?:\s*,\s*\w+(?:\s+as\s+\w+)?)*")


def _check_lines(index, code, aliases, first_line):
    """A block that does not parse as a whole (an excerpt): its lines one by one;
    of a line that is no statement either, its imports and its chains on known modules."""
    problems = []
    for i, line in enumerate(code.split("\n")):
        text = _PROMPT.sub("", line.strip()).replace("\u2026", "...")
        if not text or _parse(text) is not None:
            problems += check_python_block(index, text, aliases, first_line + i) if text else []
            continue
        m = _IMPORT.match(text) or _FROM.match(text)
        if m:
            problems += check_python_block(index, m.group(0).replace("(", ""), aliases, first_line + i)
            continue
        for base in list(aliases):
            for chain in re.finditer(rf"(?<![\w.]){re.escape(base)}((?:\.[A-Za-z_]\w*)+)", text):
                attrs = chain.group(1).split(".")[1:]
                message = index.check_chain(aliases[base], attrs)
                if message:
                    problems.append((first_line + i, f"{base}.{'.'.join(attrs)}: {message}"))
    return problems
