"""Part 5 (the goodput challenge): admit() and challenge() in policies.py keep the device rules.

The hidden traces grade goodput against the reference; here only the rules are checked.
"""

from adapters import cache_after_steps, device, pages, run_policy


def test_part5_challenge_keeps_the_rules_on_burst():
    run = run_policy("burst", "admit", "pool-256")
    dev = device("pool-256")
    for index, cache in enumerate(cache_after_steps(run)):
        assert len(cache) <= dev.max_active and pages(cache) <= dev.kv_pages, f"step {index}"
    statuses = {r["status"] for r in run["requests"]}
    assert statuses <= {"completed", "rejected", "cancelled"}
    s = run["summary"]
    print(
        f"\n  challenge on burst: {s['completed']} completed, {s['rejected']} rejected, "
        f"{s['cancelled']} cancelled"
    )
