# journalred: nothing here is a pytest test (red-team scripts and their results).
collect_ignore_glob = ["*.py"]
