"""journalred C09: browser double-click on Resume."""
import sys, json, time, uuid
from jr import *
from cases_b import stopped_task, launches, record, wait_settled, console_stop
from playwright.sync_api import sync_playwright

def main():
    console_start(f"{SCR}/p0", 8899); log("C09 console", CONSOLE["url"])
    try:
        proj, t = stopped_task("c09"); pid = pid_of(proj)
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            pg = b.new_page(viewport={"width": 1280, "height": 1400})
            posts = []
            pg.on("response", lambda r: posts.append((r.status, r.url.split("/")[-1], r.text()[:200])) if r.request.method == "POST" else None)
            pg.goto(f"{CONSOLE['url']}/?token={TOKEN}"); pg.wait_for_timeout(1000)
            for k, mode in enumerate(["dblclick", "two clicks 100 ms"], 1):
                pg.goto(f"{CONSOLE['url']}/#/p/{pid}/t/{t}"); pg.reload(); pg.wait_for_timeout(3000)
                before = len(launches(proj, t)); posts.clear()
                btn = pg.get_by_role("button", name="Resume", exact=True)
                if mode == "dblclick": btn.dblclick()
                else:
                    btn.click(); pg.wait_for_timeout(100)
                    try: btn.click(timeout=2000)
                    except Exception as e: log("second click not possible", repr(e)[:100])
                pg.wait_for_timeout(6000)
                pr = procs_for(t); nl = len(launches(proj, t)) - before
                pg.screenshot(path=f"{SCR}/shots/c09-{k}.png", full_page=False)
                txt = pg.inner_text("body")
                nothing = "nothing is running" in txt.lower() or "nothing runs" in txt.lower()
                err = [x for x in posts if x[0] >= 400]
                ok = nl == 1 and len(pr) == 1 and not nothing
                record("C09", k, "held" if ok else "FAILED", task=t, mode=mode, new_launches=nl, procs=pr, posts=posts, says_nothing_running=nothing, shot=f"shots/c09-{k}.png")
                console_stop(pid, t, proj)
            b.close()
    finally:
        killg(CONSOLE["proc"])
main()
