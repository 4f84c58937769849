#!/usr/bin/env bash
# Installs Debian's chromium for the headless-browser preview test when it is missing and this machine
# can install packages (root with apt-get). Never fails CI: the test skips cleanly without a browser.
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing chromium for the preview test"
    (DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; }) \
        || echo "==> chromium could not be installed; the preview browser test will skip"
fi
exit 0
