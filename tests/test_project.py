"""The newcomer's commands stay true: README and CI run the same test command."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    return [ln.strip() for ln in (REPO / "README.md").read_text().splitlines() if ln.startswith("    python3 -m venv")]


def test_readme_has_exactly_two_commands():
    cmds = readme_commands()
    assert len(cmds) == 2, cmds
    assert "tigris analyze examples/" in cmds[0]
    assert "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in [ln.strip() for ln in ci]


def test_example_model_exists_with_licence():
    cmd = readme_commands()[0]
    model = cmd.split("tigris analyze ")[1].split()[0]
    assert (REPO / model).is_file()
    assert (REPO / "examples" / "mnist-8_LICENSE.txt").is_file()


def test_package_data_ships_every_runtime_source():
    """An installed (non-editable) tigris builds runtime_c from its package data: every C source and header the host
    build compiles must match a package-data pattern."""
    import re
    import tomllib

    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["tigris"]
    rt = REPO / "runtime_c"
    sources = [p for p in list(rt.glob("src/**/*")) + list(rt.glob("include/*")) if p.suffix in (".c", ".h")]
    assert sources
    for p in sources:
        rel = "_runtime_c/" + p.relative_to(rt).as_posix()
        # setuptools globs: '*' stays within one folder.
        assert any(re.fullmatch(re.escape(pat).replace(r"\*", "[^/]*"), rel) for pat in patterns), rel


def test_test_modules_outside_packages_have_unique_names():
    # pytest imports a test file outside a package by its basename, so two such files with one name stop the whole
    # run at collection ("import file mismatch"), which running one file at a time never shows.
    seen: dict[str, Path] = {}
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if (path.parent / "__init__.py").exists():
            continue
        other = seen.setdefault(path.name, path)
        assert other == path, f"{path.relative_to(REPO)} and {other.relative_to(REPO)} share a module name"
