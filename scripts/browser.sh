#!/usr/bin/env bash
# Headless Chromium and its WebDriver from Debian's packages, for tests/test_site_browser.py (the
# pages of `pyspark-incr docs build` load without console errors and their graphs draw). Best
# effort, like services.sh: where it cannot install them (no root, no apt-get), it says so and
# those tests skip, naming what is missing. Only recommended packages are left out: the fonts and
# desktop integration they pull in double the download and no test needs them.
set -uo pipefail
say() { echo "browser: $*" >&2; }
need=()
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
[ ${#need[@]} -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  say "not installing ${need[*]} (needs root and apt-get): the site's browser test will skip"
  exit 0
fi
say "installing ${need[*]} from Debian's packages"
start=$SECONDS
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${need[@]}"; } >/tmp/incr-browser-apt.log 2>&1; then
  say "apt-get failed (see /tmp/incr-browser-apt.log): the site's browser test will skip"
  exit 0
fi
say "installed ${need[*]} in $((SECONDS - start)) s"
