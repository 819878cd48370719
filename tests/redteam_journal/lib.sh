# journalred helpers (sourced). Not collected by pytest (no test_*.py).
G=/work/wt/journalred/.venv/bin/graphlemon
PB=/work/redteam/journal/pb/playbook.yaml
SCR=/work/redteam/journal
export GRAPHLEMON_TEST_CONFINEMENT=auto
export GRAPHLEMON_CONFIG_DIR=$SCR/config
mkproj() {  # mkproj DIR : fresh committed copy of the snake repo, graphlemon init
  rm -rf "$1"; cp -r /work/wt/journalred/examples/snake/repo "$1"
  git -C "$1" init -q -b main && git -C "$1" add -A && git -C "$1" -c user.name=r -c user.email=r@x commit -qm start
  $G init "$1" >/dev/null
}
