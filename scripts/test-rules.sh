#!/usr/bin/env bash
# Checks the Prometheus rules with promtool, on every tier of the pinned parts (scripts/parts: the
# current Prometheus 3 and the previous 2.x, fetched on first use): syntax and lint (check rules), the
# example Prometheus configuration (check config), the unit tests under config/prometheus/tests (test
# rules), and, once, every Grafana dashboard query against Prometheus' own PromQL parser and the whole
# golden /metrics output against `promtool check metrics`.
# Usage: bash scripts/test-rules.sh   (npm run test:rules)
#        CMDB_PARTS_TIERS=current bash scripts/test-rules.sh   (one tier only)
#        CMDB_PART_PROMTOOL=/usr/bin/promtool bash scripts/test-rules.sh   (your own promtool)
set -euo pipefail
cd "$(dirname "$0")/.."

rules_dir=config/prometheus
shopt -s nullglob
rule_files=("$rules_dir"/cmdb-*.yml)
test_files=("$rules_dir"/tests/*.yml)
if [ "${#rule_files[@]}" -eq 0 ] || [ "${#test_files[@]}" -eq 0 ]; then
  echo "no rule files ($rules_dir/cmdb-*.yml) or no tests ($rules_dir/tests/*.yml) found" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node_modules/.bin/tsx test/dashboards/export-queries.ts >"$tmp/dashboard-queries.yml"

for tier in ${CMDB_PARTS_TIERS:-current previous}; do
  # The pinned promtool of the tier (or the one CMDB_PART_PROMTOOL names); a failed fetch says why.
  promtool=$(CMDB_PARTS_TIER=$tier node_modules/.bin/tsx scripts/parts.ts path promtool)
  echo "== $tier tier: promtool $("$promtool" --version 2>&1 | head -n 1)"
  echo "== check rules"
  "$promtool" check rules "${rule_files[@]}"
  echo "== check config"
  "$promtool" check config "$rules_dir/prometheus.yml"
  echo "== test rules"
  "$promtool" test rules "${test_files[@]}"
  echo "== dashboard queries (Prometheus' own parser)"
  "$promtool" check rules --lint=none "$tmp/dashboard-queries.yml"
  echo "== check metrics (test/golden/metrics.prom, the whole /metrics output for a fixed seed)"
  # promlint rejects any metric name with a "days" component. cmdb_license_days_until_expiry is fixed by
  # the metric catalogue (src/metrics/catalogue.ts: the name users' dashboards and alerts already use),
  # so that one problem is expected; any other fails.
  expected='cmdb_license_days_until_expiry use base unit "seconds" instead of "days"'
  problems=$("$promtool" check metrics <test/golden/metrics.prom 2>&1 || true)
  if [ "$problems" != "$expected" ]; then
    echo "promtool check metrics reported:" >&2
    echo "$problems" >&2
    exit 1
  fi
  echo "  only the known, catalogue-mandated unit warning for cmdb_license_days_until_expiry"
done
echo "== all rule, dashboard query and metrics checks passed"
