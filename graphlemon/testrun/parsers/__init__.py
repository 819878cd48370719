"""Pure parsers: a report or a human output in, a `ParsedRun` out. None of them raises on bad input."""
