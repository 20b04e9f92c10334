"""A student's SUBMISSION_DIR served: its policy runs in a child under the grader's sandbox and
only answers which batch; the server keeps the HTTP server, the model and the pages. Each claim
of docs/serve.md ("A student's policies") has its attack here: a policy that raises after it
took pages, loops, returns garbage or a batch that breaks a rule stops the session with one
message of the server's own, an OpenAI-shaped 500 to the request in flight and every page
back; one that floods its output or reads the server's files changes nothing."""

from __future__ import annotations

import json

import pytest
from test_serve_errors import error_of, post

from grader.serve.child import Served
from grader.serve.remote import ANSWER_S
from grader.units import REPO_ROOT
from grader.verify import verify_run

pytest.importorskip("torch", reason="PyTorch not installed (extra 'runner')")

REFERENCE = (REPO_ROOT / "solutions/unit09/policies.py").read_text()
ASK = json.dumps({"model": "tiny", "prompt": "hello there", "max_tokens": 12}).encode()


def submission(tmp_path, body: str):
    """The reference policies.py with ``cancel_aware`` replaced by ``body`` (which may call
    ``reference(view, budget)``, the reference's own)."""
    folder = tmp_path / "submission"
    folder.mkdir()
    source = REFERENCE.replace("def cancel_aware(", "def reference(", 1)
    (folder / "policies.py").write_text(f"{source}\n\ndef cancel_aware(view, budget):\n{body}")
    return folder


def serve(tmp_path, body: str) -> Served:
    return Served(tmp_path, "unit09", "cancel_aware", submission=submission(tmp_path, body))


def stops_cleanly(served: Served, said: str) -> None:
    """The request in flight gets a 500 naming ``said``; the session stops with one message,
    exit code 3, no run file and every page of the real cache back."""
    try:
        status, doc = post(served.url, "/v1/completions", ASK)
    finally:
        code, err, doc_file = served.end()
    assert status == 500 and error_of(doc)["type"] == "server_error", doc
    assert said in doc["error"]["message"]
    assert code == 3 and doc_file is None
    (line,) = [x for x in err.splitlines() if x.startswith("infralab serve: error:")]
    assert said in line and "Traceback" not in err
    assert "secret" not in err + doc["error"]["message"]  # the server's words, not the child's
    assert "KV pages in use at exit: 0" in "\n".join(served.lines)


def test_a_submission_is_served_from_the_sandbox_and_its_run_replays(tmp_path):
    served = serve(tmp_path, "    return reference(view, budget)\n")
    try:
        replies = [post(served.url, "/v1/completions", ASK) for _ in range(3)]
    finally:
        code, err, doc = served.end()
    assert code == 0, err
    assert [status for status, _ in replies] == [200] * 3
    (run,) = doc["runs"]
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    assert "KV pages in use at exit: 0" in "\n".join(served.lines)


def test_a_policy_that_raises_after_taking_pages_stops_the_session_with_every_page_back(
    tmp_path,
):
    body = (
        "    global CALLS\n    CALLS = globals().get('CALLS', 0) + 1\n"
        "    if CALLS > 3:\n        raise ValueError('a secret the server does not repeat')\n"
        "    return reference(view, budget)\n"
    )
    served = serve(tmp_path, body)
    stops_cleanly(served, "cancel_aware() raised ValueError in its sandboxed child")


def test_a_policy_that_loops_is_stopped_after_its_answer_time(tmp_path):
    served = serve(tmp_path, "    while True:\n        pass\n")
    stops_cleanly(served, f"cancel_aware() did not answer within {ANSWER_S:g} s")


def test_a_policy_that_returns_garbage_is_refused(tmp_path):
    served = serve(tmp_path, "    return 42\n")
    stops_cleanly(served, "cancel_aware() returned something that is neither a Batch nor a Wait")


def test_a_batch_that_breaks_a_rule_is_refused_by_the_servers_engine(tmp_path):
    served = serve(tmp_path, "    return Batch(decode=['no-such-request'])\n")
    stops_cleanly(served, "no-such-request")


def test_a_policy_that_floods_its_output_or_reads_the_servers_files_changes_nothing(tmp_path):
    secret = REPO_ROOT / "grader" / "serve" / "remote.py"  # the server's own file
    body = (
        "    import sys\n"
        "    for _ in range(200):\n"
        "        print('x' * 100000)\n        print('y' * 100000, file=sys.stderr)\n"
        "    try:\n"
        f"        open({str(secret)!r}).read()\n"
        "        return 42  # it could read it: the session fails\n"
        "    except OSError:\n"
        "        return reference(view, budget)\n"
    )
    served = serve(tmp_path, body)
    try:
        status, doc = post(served.url, "/v1/completions", ASK)
    finally:
        code, err, _ = served.end()
    assert code == 0 and status == 200, (err, doc)
    assert doc["usage"]["completion_tokens"] == 12
    assert "xxxxx" not in "\n".join(served.lines) + err


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda tmp: tmp / "missing", "not a folder"),
        (lambda tmp: tmp, "no policies.py"),
    ],
)
def test_a_bad_submission_dir_is_one_usage_error(tmp_path, capsys, make, said):
    from grader.cli.main import main

    argv = ["serve", "--unit", "unit09", "--policy", "cancel_aware", str(make(tmp_path))]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and err.startswith("infralab serve: error:")
    assert main([*argv[:-1], "--reference", str(tmp_path)]) == 2
    assert "not both" in capsys.readouterr().err
