"""extract_evidence / verify_all: real quotes pass, fabricated ones and hostile paths are refused."""

from __future__ import annotations

import os

import pytest

from graphlemon.triage.evidence_check import resolve_in_project, verify_all, verify_one


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / ".graphlemon" / "units" / "profile-be").mkdir(parents=True)
    (root / "src" / "server.js").write_text(
        "const app = express();\n"
        "app.get('/api/profile/me', async (req, res) => {\n"
        "  const userId = userIdFrom(req.headers.authorization);\n"
        "  res.json({ user_id: userId });\n"
        "});\n"
    )
    (root / ".graphlemon" / "units" / "profile-be" / "contract.json").write_text(
        '{"responses": {"200": "ok", "404": "nf"}}\n'
    )
    (root / "sdd.md").write_text("- 401 if token expired\n  or its signature does not verify\n")
    return root


def test_path_quote_and_path_line_quote_verify(root):
    report = verify_all(
        root,
        [
            "src/server.js: app.get('/api/profile/me'",
            "src/server.js:3: const userId = userIdFrom(req.headers.authorization);",
            "'src/server.js': 'res.json({ user_id: userId })'",
        ],
    )
    assert report.ok, report.failed
    assert [r.line for r in report.results] == [2, 3, 4]
    assert {r.hit_file for r in report.results} == {"src/server.js"}


def test_matching_ignores_case_and_whitespace_runs_even_across_lines(root):
    assert verify_one(root, "sdd.md: 401   IF TOKEN expired or its signature").ok
    assert verify_one(root, "sdd.md:1: token expired or its signature does not verify").ok


def test_fabricated_quote_is_rejected(root):
    check = verify_one(root, "src/server.js: jwt.verify(token, process.env.JWT_SECRET)")
    assert not check.ok and check.reason == "quote not found in file"


def test_quote_on_the_wrong_line_is_rejected(root):
    check = verify_one(root, "src/server.js:1: const userId = userIdFrom(req.headers.authorization);")
    assert not check.ok


def test_line_beyond_end_of_file_is_rejected(root):
    assert "beyond the end" in verify_one(root, "src/server.js:99: const app").reason


def test_seed_example_paraphrase_is_not_evidence(root):
    # a reference triager writes evidence like this; it is a paraphrase, not a quote, and must not pass
    report = verify_all(root, ["http-trace step 1: expired token returns 200 not 401"])
    assert not report.ok and report.failed[0].reason.startswith("file not found")


def test_seed_style_paths_resolve_under_the_state_dir(root):
    check = verify_one(root, 'units/profile-be/contract.json: "404": "nf"')
    assert check.ok and check.hit_file == ".graphlemon/units/profile-be/contract.json"


@pytest.mark.parametrize(
    "item, reason",
    [
        ("no separator here", "malformed"),
        ("src/server.js: ok", "too short"),
        ("src/server.js:", "malformed"),
        ("missing.js: some quote that is long", "file not found"),
        ("src: some quote that is long", "file not found"),
    ],
)
def test_malformed_short_and_missing(root, item, reason):
    check = verify_one(root, item)
    assert not check.ok and reason in check.reason


@pytest.mark.parametrize(
    "item",
    [
        "../secret.txt: top secret value",
        "src/../../secret.txt: top secret value",
        "/etc/passwd: root:x:0:0:root",
        "~/secret.txt: top secret value",
        "C:\\Windows\\win.ini: [fonts] section",
        "..\\secret.txt: top secret value",
    ],
)
def test_paths_leaving_the_project_are_refused(root, item):
    (root.parent / "secret.txt").write_text("top secret value\n")
    check = verify_one(root, item)
    assert not check.ok
    assert "refused" in check.reason or "malformed" in check.reason


def test_symlink_out_of_the_project_is_refused_but_inside_is_fine(root):
    (root.parent / "secret.txt").write_text("top secret value\n")
    os.symlink(root.parent / "secret.txt", root / "link.txt")
    os.symlink(root / "src" / "server.js", root / "alias.js")
    os.symlink(root.parent, root / "up")
    assert "outside the project" in verify_one(root, "link.txt: top secret value").reason
    assert "outside the project" in verify_one(root, "up/secret.txt: top secret value").reason
    assert verify_one(root, "alias.js: app.get('/api/profile/me'").ok


def test_resolve_in_project_raises_typed_errors(root):
    from graphlemon.errors import GraphLemonError

    with pytest.raises(GraphLemonError) as err:
        resolve_in_project(root, "../x")
    assert err.value.code == "SANDBOX_VIOLATION"
    with pytest.raises(GraphLemonError) as err:
        resolve_in_project(root, "")
    assert err.value.code == "INVALID_PARAM"


def test_large_file_is_streamed(root):
    big = root / "process.log"
    with big.open("w") as fh:
        for i in range(200_000):
            fh.write(f"2026-05-13T12:00:00Z [integrator] line {i} nothing interesting\n")
        fh.write("[orders-be] Error: listen EADDRINUSE: address already in use :::4000\n")
    assert big.stat().st_size > 10 * 1024 * 1024
    check = verify_one(root, "process.log: listen EADDRINUSE: address already in use")
    assert check.ok and check.line == 200_001
    assert verify_one(root, "process.log:200001: Error: listen EADDRINUSE").ok


def test_huge_or_non_string_evidence_is_rejected(root):
    assert not verify_one(root, "src/server.js: " + "x" * 5000).ok
    assert not verify_all(root, [None]).ok  # type: ignore[list-item]
