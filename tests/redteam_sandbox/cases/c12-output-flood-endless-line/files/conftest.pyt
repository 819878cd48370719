"""sbxred c12: a conftest that floods the run's output (payload; runs only inside GraphLemon's sandbox)."""
import os


def pytest_sessionstart(session):
    chunk = b"A" * (1 << 20)
    for _ in range(400):
        os.write(1, chunk)  # 400 MB on stdout, no newline
    for _ in range(50):
        os.write(2, chunk)  # 50 MB on stderr, no newline
