#!/usr/bin/env bash
# fi.ListsProvider (DESIGN.md 6.3 M0): libfabric finds libmroce-fi.so through FI_PROVIDER_PATH,
# `fi_info -p mroce` lists MSG and RDM on both memloop domains, `fi_info -e` documents the FI_MROCE_*
# parameters, the .so exports fi_prov_ini only, and a missing or bad FI_MROCE_PORT / FI_MROCE_LAYERING
# gives exactly one warning line from mroce and no entry.
#   lists_provider.sh <path of libmroce-fi.so>     (env: FI_PROVIDER_PATH, FI_PROVIDER, FI_MROCE_PORT)
set -uo pipefail
so=$1
fail=0
check() {  # check <description> <command...>: runs the command, reports, remembers failures
  local what=$1
  shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fail=1; fi
}

exports=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
check "exports exactly fi_prov_ini (got: $(echo $exports))" test "$exports" = fi_prov_ini

list=$(fi_info -l 2>&1)
check "fi_info -l lists mroce" grep -q '^mroce:' <<<"$list"

info=$(fi_info -p mroce 2>&1)
for domain in memloop:0 memloop:1; do
  for type in FI_EP_MSG FI_EP_RDM; do
    check "fi_info -p mroce: $domain $type" \
      grep -q "domain: $domain.*type: $type" <<<"$(tr -d '\n' <<<"$info" | sed 's/provider:/\n&/g')"
  done
done
check "fi_info -p mroce: only mroce entries (no layered ofi_rxm)" bash -c '! grep -q "ofi_rxm" <<<"$1"' _ "$info"

params=$(fi_info -e 2>&1)
for p in FI_MROCE_PORT FI_MROCE_IP FI_MROCE_MAC FI_MROCE_LAYERING; do
  check "fi_info -e documents $p" grep -aq "# $p:" <<<"$params"
done

# Misconfiguration: one FI_WARN line from mroce naming the variable, no mroce entry.
one_warning() {  # one_warning <env assignment> <pattern>
  local out
  out=$(env "$1" FI_LOG_LEVEL=warn fi_info -p mroce 2>&1)
  local n
  n=$(grep -ac '::mroce:.*<warn>' <<<"$out")
  [ "$n" -eq 1 ] && grep -aq "$2" <<<"$out" && ! grep -aq '^provider: mroce' <<<"$out"
}
check "FI_MROCE_PORT unset: one warning" bash -c "$(declare -f one_warning); unset FI_MROCE_PORT; one_warning X=1 'FI_MROCE_PORT is not set'"
check "FI_MROCE_PORT=bogus: one warning" one_warning FI_MROCE_PORT=bogus "FI_MROCE_PORT='bogus' is not a port spec"
check "FI_MROCE_PORT=af_packet:<missing>: one warning" one_warning FI_MROCE_PORT=af_packet:mroce-none0 \
  "no interface 'mroce-none0'\|this build has no DPDK ports"
check "FI_MROCE_LAYERING=maybe: one warning" one_warning FI_MROCE_LAYERING=maybe "FI_MROCE_LAYERING='maybe' is not a boolean"

exit $fail
