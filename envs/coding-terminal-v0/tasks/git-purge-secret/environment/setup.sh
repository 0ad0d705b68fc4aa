#!/bin/bash
# Builds /app: a repo where config/secrets.env (live credentials) was committed and then changed on
# main and develop; v1.0 is an annotated tag. Nothing has been pushed yet.
set -euo pipefail
cd /app
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_COMMITTER_NAME="Lena Brandt" GIT_COMMITTER_EMAIL="lena@paydesk.example"
t=1708000000
as() { export GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2"; }
commit() { t=$((t+3700)); git add -A; GIT_AUTHOR_DATE="@$t +0100" GIT_COMMITTER_DATE="@$t +0100" git commit -q -m "$1"; }
git init -q -b main .
git config user.name "Agent" && git config user.email "agent@paydesk.example"
as "Lena Brandt" "lena@paydesk.example"
printf '__pycache__/\n*.pyc\n' > .gitignore
cat > app.py <<'PY'
"""paydesk: tiny invoicing API."""


def main():
    print("paydesk starting")


if __name__ == "__main__":
    main()
PY
printf '# paydesk\n\nInvoicing service.\n' > README.md
commit "Initial skeleton"
mkdir -p config
printf '[server]\nport = 8040\nworkers = 2\n' > config/settings.toml
cat > config.py <<'PY'
import os
import tomllib


def load(path="config/settings.toml"):
    with open(path, "rb") as f:
        cfg = tomllib.load(f)
    cfg["secrets"] = dict(line.strip().split("=", 1) for line in open("config/secrets.env") if "=" in line)
    return cfg
PY
commit "Add config loader"
as "Tomasz Wieczorek" "tomasz@paydesk.example"
printf 'STRIPE_KEY=sk_live_Zt81pQm4WcR0xv7LbN2sKe93\nDB_PASSWORD=pg-prod-Qe4!mv82Lx\n' > config/secrets.env
cat > payments.py <<'PY'
from decimal import Decimal


def charge_amount(invoice_total):
    """Amount in minor units (cents) to send to the payment provider."""
    return int(Decimal(invoice_total) * 100)
PY
commit "Add payment provider integration"
mkdir -p docs
printf '# Deploying\n\nCredentials live in config/secrets.env on the host (never in the image).\n' > docs/deploy.md
commit "Add deploy notes"
printf 'STRIPE_KEY=sk_live_9bV3nHs0Pq6TyUe1Wk5dRa7M\nDB_PASSWORD=pg-prod-Qe4!mv82Lx\n' > config/secrets.env
commit "Rotate Stripe key"
as "Lena Brandt" "lena@paydesk.example"
cat > app.py <<'PY'
"""paydesk: tiny invoicing API."""


def health():
    return {"status": "ok"}


def main():
    print("paydesk starting")


if __name__ == "__main__":
    main()
PY
commit "Add health endpoint"
git branch develop
cat > payments.py <<'PY'
from decimal import Decimal, ROUND_HALF_UP


def charge_amount(invoice_total):
    """Amount in minor units (cents) to send to the payment provider."""
    return int((Decimal(invoice_total) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
PY
commit "Fix rounding of charge amounts"
echo "1.0.0" > VERSION
commit "Release 1.0"
GIT_COMMITTER_DATE="@$((t+60)) +0100" git tag -a v1.0 -m "paydesk 1.0"
git checkout -q develop
as "Tomasz Wieczorek" "tomasz@paydesk.example"
cat > webhooks.py <<'PY'
import hashlib
import hmac


def verify(payload, signature, secret):
    mac = hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, signature)
PY
printf 'WEBHOOK_SECRET=whsec_Lr5Ny2Ud8Ko1Fa6Ji3Hb\n' >> config/secrets.env
commit "Add webhook signature verification"
t=$((t+3700))
GIT_AUTHOR_DATE="@$t +0100" GIT_COMMITTER_DATE="@$t +0100" git merge -q --no-ff -m "Merge branch 'main' into develop" main
cat >> webhooks.py <<'PY'


def should_retry(status):
    return status >= 500 or status == 429
PY
commit "Retry webhooks on 5xx and 429"
git checkout -q main
git checkout -q develop -- config/secrets.env 2>/dev/null || true
git reset -q
git gc -q
