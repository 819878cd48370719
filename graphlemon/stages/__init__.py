"""The DevLoop's stages, one file per stage and named by its role (the README's stage table), with what
every stage shares: the task's `LoopSession` (session.py), the outcomes stages return (outcomes.py) and the
routing tables that turn an outcome into the loop's next step (routing.py). Pure domain: no Prefect."""
