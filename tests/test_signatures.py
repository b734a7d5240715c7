"""No default of its own for a profile key: no function or method of the library gives a parameter named after a
key of notebooks/params/default.yaml (``config.PARAMETER_NAMES``) a default value. Every such value comes from the
profile (``config.Params``), passed by whoever calls; a default beside it would be a second, silent source of the same
number (issue #49)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from unlearnkit import config, paths

PACKAGE = paths.ROOT / "lib" / "unlearnkit"

#: No exception: every library parameter named after a profile key takes its value from the caller (the profile's,
#: through ``params``). A hit that must stay would be listed here with its reason; the test fails on an entry that no
#: longer matches, so the list cannot outlive its hits.
ALLOWED: set[str] = set()


def defaults_of_profile_keys(tree: ast.AST, module: str, names: frozenset[str]) -> Iterator[str]:
    """``module:function:param=default`` for every parameter in ``names`` that has a default, in every function,
    method (``Class.method``), nested function and lambda of ``tree``."""

    def visit(node: ast.AST, prefix: str) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                name = prefix + (child.name if not isinstance(child, ast.Lambda) else "<lambda>")
                args = child.args
                positional = args.posonlyargs + args.args
                pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
                pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
                for arg, default in pairs:
                    if arg.arg in names:
                        yield f"{module}:{name}:{arg.arg}={ast.unparse(default)}"
                yield from visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, prefix + child.name + ".")
            else:
                yield from visit(child, prefix)

    yield from visit(tree, "")


def _library() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        yield ".".join(["unlearnkit", *(p for p in rel.parts if p != "__init__")]), path


NAMES = frozenset(config.PARAMETER_NAMES)
FOUND = sorted(hit for module, path in _library()
               for hit in defaults_of_profile_keys(ast.parse(path.read_text()), module, NAMES))


def test_no_library_signature_gives_a_profile_key_a_default():
    extra = [hit for hit in FOUND if hit not in ALLOWED]
    assert not extra, ("parameters named after a profile key with a default of their own (drop the default and pass "
                       "the profile's value, or rename a parameter that means something else):\n  "
                       + "\n  ".join(extra))


def test_every_allowed_hit_still_exists():
    gone = sorted(ALLOWED - set(FOUND))
    assert not gone, "allowed hits that are gone (remove them from ALLOWED):\n  " + "\n  ".join(gone)


def test_the_walker_finds_a_planted_default_wherever_it_hides():
    source = '''
def plain(seed=0, other=1):
    pass

def keyword_only(x, *, max_new_tokens=48, jobs):
    pass

def positional_only(forget_split="forget10", /, template=None):
    pass

class Holder:
    def method(self, dtype="float32"):
        def inner(alpha=0.05):
            pass

    @classmethod
    def make(cls, sampler="hf"):
        pass

async def later(model="tiny"):
    pass

pick = lambda lambda_f=1.0: lambda_f

def fine(seed, jobs, *, template, n_samples_other=3, other=0):
    pass
'''
    found = list(defaults_of_profile_keys(ast.parse(source), "planted", NAMES))
    assert found == ["planted:plain:seed=0", "planted:keyword_only:max_new_tokens=48",
                     "planted:positional_only:forget_split='forget10'", "planted:positional_only:template=None",
                     "planted:Holder.method:dtype='float32'", "planted:Holder.method.inner:alpha=0.05",
                     "planted:Holder.make:sampler='hf'", "planted:later:model='tiny'",
                     "planted:<lambda>:lambda_f=1.0"]
