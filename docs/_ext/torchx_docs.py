"""The Sphinx side of the documentation site: generated pages, included files, strictness.

* ``builder-inited``: writes the generated pages (:mod:`sitegen`) under
  ``docs/reference/`` before Sphinx reads any source, so every build shows the code as
  it is installed now.
* ``include-read`` and ``source-read``: the repository's Markdown files are included
  where they live (README.md, each distribution's README and CHANGELOG,
  bench/README.md), never copied. Their links are relative to the repository, so each
  link to a file the site shows as a page is pointed at that page, and a link to any
  other file of the repository (a script, a folder) becomes its path in code: the site
  is not the repository. A link whose target exists nowhere is left alone, so the build
  fails on it. Included sections have their headings shifted to sit under the page's
  title.
* ``missing-reference``: a project name that Sphinx does not find where it looked is
  searched as Python would (the class, the module, its imports) and linked to where it is
  documented: a name a package re-exports (``torchx.specs.AppDef``), a method a scheduler
  inherits (``run_opts``), an error a docstring names through its module's imports.
* ``warn-missing-reference``: the site is built offline (no intersphinx inventories of
  Python, attrs, pluggy...), so a reference to a name outside the project's packages
  cannot be linked and is not a warning; a reference to a missing name *of the project*
  (``torchx.*``, ``torchx_*``) is, and fails the build. In a signature (not written by
  hand) a private type, a type variable or an alias is not a failure either.
* ``autodoc-process-docstring`` / ``autodoc-process-signature``: an attrs class gets one
  attribute entry per field (type, default, and its description taken from the class
  docstring's ``Args:``), read with ``attrs.fields``; its signature is written from the
  fields too (attrs' generated ``__init__`` shows ``NOTHING`` and ``attr_dict[...]``).
* napoleon reads an attribute's docstring "Where it came from: ..." as prose, not as a
  type before a colon (the type comes from the annotation).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import sitegen

ROOT = sitegen.ROOT
DOCS = sitegen.DOCS

#: Set to "0" to build without writing the generated pages (the tests' small projects).
GENERATE_ENV = "TORCHX_DOCS_GENERATE"

LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6}) ", re.MULTILINE)


def site_pages() -> dict[str, str]:
    """Repository file (posix path) -> the docname of the site page showing it whole."""
    pages = {"README.md": "index", "bench/README.md": "benchmarks"}
    for path in DOCS.glob("*.md"):
        pages[f"docs/{path.name}"] = path.stem
    for dist, folder in sitegen.distributions().items():
        rel = folder.relative_to(ROOT).as_posix()
        pages[f"{rel}/CHANGELOG.md"] = f"reference/changelogs/{dist}"
        if folder.parent.name == "packages":
            pages[f"{rel}/README.md"] = f"reference/packages/{dist}"
    for name, dist in _plugin_scheduler_pages().items():
        rel = sitegen.distributions()[dist].relative_to(ROOT).as_posix()
        pages.setdefault(f"{rel}/README.md", f"reference/schedulers/{name}")
    return pages


_SCHEDULER_PAGES: dict[str, str] | None = None


def _plugin_scheduler_pages() -> dict[str, str]:
    """First scheduler name of each plugin distribution -> that distribution."""
    global _SCHEDULER_PAGES
    if _SCHEDULER_PAGES is None:
        firsts: dict[str, str] = {}
        for name in sitegen.scheduler_factories():
            dist = sitegen.scheduler_distribution(name)
            if dist != "torchx-runner" and dist not in firsts.values():
                firsts[name] = dist
        _SCHEDULER_PAGES = firsts
    return _SCHEDULER_PAGES


def rewrite_links(text: str, source: Path, page_dir: Path, pages: dict[str, str]) -> str:
    """Repository-relative links of ``text`` (read from ``source``) made right for a page
    in ``page_dir`` (a folder under docs/): see the module docstring."""

    def fix(match: re.Match[str]) -> str:
        text_, target = match.group("text"), match.group("target")
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve()
        try:
            rel = resolved.relative_to(ROOT).as_posix()
        except ValueError:
            return match.group(0)
        if resolved.is_dir() and f"{rel}/README.md" in pages:
            rel = f"{rel}/README.md"
        if rel in pages:
            return f"[{text_}](/{pages[rel]}.md{'#' + anchor if anchor else ''})"
        if not resolved.exists():
            return match.group(0)  # broken: MyST warns, the build fails
        if source.parent == page_dir and resolved.is_relative_to(DOCS):
            return match.group(0)  # a page's own neighbour: MyST resolves it
        shown = rel + ("/" if resolved.is_dir() else "")
        return (
            text_
            if text_.strip("`") == rel.rstrip("/") or text_ == shown
            else (f"{text_} (`{shown}`)")
        )

    return _outside_fences(text, lambda chunk: LINK.sub(fix, chunk))


def _outside_fences(text: str, fn: Any) -> str:
    """``fn`` applied to the parts of ``text`` that are not inside fenced code blocks."""
    parts = re.split(r"(^(?:```|~~~)[^\n]*\n.*?^(?:```|~~~)[ \t]*$)", text, flags=re.M | re.S)
    return "".join(p if i % 2 else fn(p) for i, p in enumerate(parts))


def shift_headings(text: str, top: int) -> str:
    """Headings moved so that the highest one of ``text`` is at level ``top``."""
    levels = [len(m.group(1)) for m in HEADING.finditer(_strip_fences(text))]
    if not levels:
        return text
    delta = top - min(levels)
    if delta == 0:
        return text

    def move(chunk: str) -> str:
        return HEADING.sub(lambda m: "#" * max(1, min(6, len(m.group(1)) + delta)) + " ", chunk)

    return _outside_fences(text, move)


def _strip_fences(text: str) -> str:
    return re.sub(r"^(?:```|~~~)[^\n]*\n.*?^(?:```|~~~)[ \t]*$", "", text, flags=re.M | re.S)


# -- Sphinx events ------------------------------------------------------------------------------


def _generate(app: Any) -> None:
    if os.environ.get(GENERATE_ENV, "1") == "0":
        return
    sitegen.write_all(sitegen.generate())


def _include_read(app: Any, relative_path: Path, parent_docname: str, content: list[str]) -> None:
    source = (Path(app.srcdir) / relative_path).resolve()
    page_dir = (Path(app.srcdir) / parent_docname).parent
    text = rewrite_links(content[0], source, page_dir, _pages(app))
    # a whole document keeps its title; a section goes under the page's
    content[0] = (
        text
        if HEADING.search(text) and re.search(r"^# ", _strip_fences(text), re.M)
        else shift_headings(text, 2)
    )


def _source_read(app: Any, docname: str, content: list[str]) -> None:
    source = Path(app.env.doc2path(docname))
    content[0] = rewrite_links(content[0], source, source.parent, _pages(app))


def _pages(app: Any) -> dict[str, str]:
    cached = getattr(app, "_torchx_site_pages", None)
    if cached is None:
        cached = site_pages() if os.environ.get(GENERATE_ENV, "1") != "0" else {}
        app._torchx_site_pages = cached
    return cached


def _import_path(path: str) -> tuple[bool, Any]:
    """(found, object) for a dotted ``path``: the longest importable module, then attributes."""
    import importlib

    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except Exception:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False, None
        return True, obj
    return False, None


def find_object(target: str, module: str | None, cls: str | None) -> tuple[str, Any] | None:
    """The object a reference names, searched as Python scoping would: the class, the
    module, then the name as given. ``(path, object)`` or None."""
    target = target.lstrip("~.")
    candidates = []
    if module and cls:
        candidates.append(f"{module}.{cls}.{target}")
    if module:
        candidates.append(f"{module}.{target}")
    candidates.append(target)
    for path in candidates:
        found, obj = _import_path(path)
        if found:
            return path, obj
    import builtins

    if hasattr(builtins, target):
        return target, getattr(builtins, target)
    return None


def _is_project(name: str) -> bool:
    return name.startswith(("torchx.", "torchx_", "acme_torchx")) or name == "torchx"


def _owner_name(obj: Any) -> str:
    inner = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
    if isinstance(inner, type(os)):
        return inner.__name__
    module = getattr(inner, "__module__", None) or getattr(
        getattr(inner, "__objclass__", None), "__module__", None
    )
    qualname = getattr(inner, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else ""


def _documented_as(path: str, obj: Any, objects: Any) -> list[str]:
    """Names under which ``obj`` (reached as ``path``) is documented on the site."""
    names = []
    canonical = _owner_name(obj)
    if canonical and canonical in objects:
        names.append(canonical)
    if not names:
        last = path.rsplit(".", 1)[-1]
        for name in objects:
            if name.endswith("." + last) and _is_project(name):
                found, other = _import_path(name)
                if found and other is obj:
                    names.append(name)
                    break
    return names


def _enclosing_scope(node: Any) -> tuple[str | None, str | None]:
    """(module, class) where the object whose docstring holds ``node`` was defined.

    A class or function documented on its package's page (``torchx.specs.AppDef``) keeps
    the names of its own module in scope for its docstring's references, as in Python.
    """
    from sphinx import addnodes

    parent = node.parent
    while parent is not None and not isinstance(parent, addnodes.desc):
        parent = parent.parent
    if parent is None:
        return None, None
    sig = next(iter(parent.findall(addnodes.desc_signature)), None)
    if sig is None or not sig.get("module") or not sig.get("fullname"):
        return None, None
    found, obj = _import_path(f"{sig['module']}.{sig['fullname']}")
    if not found:
        return None, None
    owner = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
    module = getattr(owner, "__module__", None)
    qualname = getattr(owner, "__qualname__", "") or ""
    cls = qualname.rsplit(".", 1)[0] if "." in qualname else None
    if isinstance(obj, type):
        cls = qualname
    return module, cls


def _find(node: Any) -> tuple[str, Any] | None:
    """The object ``node`` names, in the scope Sphinx gave it, then in its definition's."""
    found = find_object(node["reftarget"], node.get("py:module"), node.get("py:class"))
    if found is None:
        module, cls = _enclosing_scope(node)
        if module and module != node.get("py:module"):
            found = find_object(node["reftarget"], module, cls)
    return found


def _resolve_missing(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Links a project name to where it is documented: a name re-exported by a package
    (``torchx.specs.AppDef``), inherited by a class (``run_opts`` of a scheduler) or
    imported into the module whose docstring names it."""
    if node.get("refdomain") != "py":
        return None
    found = _find(node)
    if found is None:
        return None
    path, obj = found
    py = env.get_domain("py")
    for name in _documented_as(path, obj, py.objects):
        if name == node["reftarget"]:
            continue
        for role in (node["reftype"], "obj"):
            ref = py.resolve_xref(env, node["refdoc"], app.builder, role, name, node, contnode)
            if ref is not None:
                return ref
    return None


def _warn_missing_reference(app: Any, domain: Any, node: Any) -> bool | None:
    """Whether to keep quiet about a reference that resolved to nothing: True only for a
    name outside the project (nothing to link it to offline), and, in a signature, for a
    private name, a type variable or a name imported for type checking only."""
    if domain is None or domain.name != "py":
        return None
    import typing

    target = str(node.get("reftarget", ""))
    found = _find(node)
    in_signature = not _is_prose(node)
    if found is None:
        if _is_project(target.lstrip("~.")):
            return None
        return True if in_signature or "." in target else None
    path, obj = found
    owner = _owner_name(obj) or path
    if isinstance(obj, typing.TypeVar):
        return True
    if not _is_project(owner) and not _is_project(path if owner == path else owner):
        return True
    if in_signature and any(p.startswith("_") for p in owner.split(".")):
        return True
    if in_signature and not isinstance(obj, type | type(os)) and not callable(obj):
        return True  # a type alias (``Dirs = Iterable[str] | ...``): no object to document
    return None


def _is_prose(node: Any) -> bool:
    """Whether ``node`` was written in a docstring's text (a role), not made from a signature."""
    from sphinx import addnodes

    parent = node.parent
    while parent is not None:
        if isinstance(parent, addnodes.desc_signature):
            return False
        parent = parent.parent
    return True


def _is_attrs_class(obj: Any) -> bool:
    return isinstance(obj, type) and hasattr(obj, "__attrs_attrs__")


def _attrs_default(field: Any) -> str | None:
    import attrs

    default = field.default
    if default is attrs.NOTHING:
        return None
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory = default.factory
        return f"{getattr(factory, '__name__', repr(factory))}()"
    import enum

    if isinstance(default, enum.Enum):
        return f"{type(default).__name__}.{default.name}"
    return repr(default)


def _attrs_type(field: Any) -> str:
    tp = field.type
    if tp is None:
        return ""
    text = tp if isinstance(tp, str) else getattr(tp, "__name__", None) or repr(tp)
    return re.sub(r"\btyping\.", "", str(text))


def _args_section(lines: list[str]) -> tuple[int, int, dict[str, list[str]]] | None:
    """(start, end, {name: description lines}) of the Google ``Args:`` section of ``lines``."""
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() in ("Args:", "Arguments:"))
    except StopIteration:
        return None
    indent = len(lines[start]) - len(lines[start].lstrip())
    entries: dict[str, list[str]] = {}
    current = None
    entry_depth = 0
    end = start + 1
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if not line.strip():
            end = i + 1
            continue
        depth = len(line) - len(line.lstrip())
        if depth <= indent:
            break
        match = re.match(r"^\s*\*{0,2}(\w+)(?:\s*\(.*?\))?:\s*(.*)$", line)
        if match and (current is None or depth <= entry_depth):
            current, entry_depth = match.group(1), depth
            entries[current] = [match.group(2)]
        elif current is not None:
            entries[current].append(line.strip())
        end = i + 1
    return start, end, entries


def _process_docstring_early(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """Before napoleon: attrs fields become attributes; attribute docs are not "type: text"."""
    if what != "class" or not _is_attrs_class(obj):
        return
    import attrs
    from sphinx.pycode import ModuleAnalyzer

    try:
        own_docs = ModuleAnalyzer.for_module(obj.__module__).find_attr_docs()
    except Exception:
        own_docs = {}
    # a field with its own doc comment is documented by autodoc already
    fields = [f for f in attrs.fields(obj) if f.init and (obj.__qualname__, f.name) not in own_docs]
    if not fields:
        return
    described: dict[str, list[str]] = {}
    section = _args_section(lines)
    if section is not None:
        start, end, entries = section
        names = {f.name for f in fields} | {getattr(f, "alias", f.name) for f in fields}
        if set(entries) <= names:
            described = entries
            del lines[start:end]
    lines.append("")
    for field in fields:
        lines.append(f".. py:attribute:: {field.name}")
        tp = _attrs_type(field)
        if tp:
            lines.append(f"   :type: {tp}")
        default = _attrs_default(field)
        if default is not None:
            lines.append(f"   :value: {default}")
        text = described.get(field.name) or described.get(getattr(field, "alias", "") or "")
        if text:
            lines.append("")
            lines += [f"   {t}" for t in text]
        if default is None:
            lines += ["", "   Required."]
        lines.append("")


def attrs_signature(cls: type) -> str:
    """The constructor's signature of an attrs class, written from its fields.

    attrs generates ``__init__`` with defaults such as ``attr_dict['x'].default`` and
    ``NOTHING`` (for factories): the signature shows each field's own default instead,
    and ``list()`` for ``attrs.field(factory=list)``.
    """
    import attrs

    params = []
    star = False
    for field in attrs.fields(cls):
        if not field.init:
            continue
        if field.kw_only and not star:
            params.append("*")
            star = True
        name = getattr(field, "alias", None) or field.name
        text = name
        tp = _attrs_type(field)
        if tp:
            text += f": {tp}"
        default = _attrs_default(field)
        if default is not None:
            text += f" = {default}"
        params.append(text)
    return f"({', '.join(params)})"


def _process_signature(
    app: Any, what: str, name: str, obj: Any, options: Any, signature: str | None, ret: str | None
) -> tuple[str | None, str | None] | None:
    if what == "class" and _is_attrs_class(obj):
        code = getattr(getattr(obj, "__init__", None), "__code__", None)
        if code is not None and code.co_filename.startswith("<attrs generated"):
            return attrs_signature(obj), ret
    return None


def _inline_attribute_untyped(self: Any) -> tuple[str, list[str]]:
    """napoleon's reading of an attribute's docstring, without taking the text before its
    first colon for a type ("Where the entry came from: ..." is prose; the type comes
    from the annotation)."""
    lines = self._dedent(self._consume_to_end())
    return "", self.__class__(lines, self._config).lines()


def _process_bases(app: Any, name: str, obj: Any, options: Any, bases: list[Any]) -> None:
    """No "Bases: object": a class with no base of note shows none."""
    if bases == [object]:
        bases.clear()


def setup(app: Any) -> dict[str, Any]:
    from sphinx.ext.napoleon.docstring import GoogleDocstring

    GoogleDocstring._consume_inline_attribute = _inline_attribute_untyped
    app.connect("builder-inited", _generate)
    app.connect("include-read", _include_read)
    app.connect("source-read", _source_read)
    app.connect("missing-reference", _resolve_missing)
    app.connect("warn-missing-reference", _warn_missing_reference)
    app.connect("autodoc-process-docstring", _process_docstring_early, priority=400)
    app.connect("autodoc-process-signature", _process_signature)
    app.connect("autodoc-process-bases", _process_bases)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
