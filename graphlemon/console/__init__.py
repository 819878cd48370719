"""The GraphLemon console: a live web view of the loop and the human actions it needs (REQ-09/10/11/12).

`graphlemon console` serves `app.create_app()` with uvicorn. The console reads the ledger
(`feed`, `views`) and acts through the same domain calls as the CLI; it never imports Prefect
except to start a deployment run (`launch`).
"""
