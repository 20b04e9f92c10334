"""Part 4 (optional): fair() in policies.py, deficit round robin over tenants (31.6)."""

from adapters import check_timeline, run_policy


def test_part4_fair_tenants_timeline():
    check_timeline("tenants", "fair", run_policy("tenants", "fair", "pool-256"))


def test_part4_fair_serves_both_tenants_early():
    run = run_policy("tenants", "fair", "pool-256")
    first = {}
    for event in run["events"]:
        for chunk in event["prefill"]:
            tenant = chunk["id"][0]
            first.setdefault(tenant, event["startMs"])
    assert first["c"] < 300, "chat must not wait for the whole batch flood"
