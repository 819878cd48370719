"""harnessred's scenarios are run by run_scenarios.py, never collected by pytest."""

collect_ignore_glob = ["*"]
