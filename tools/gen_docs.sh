#!/usr/bin/env bash
# Regenerates what dtrain's tables document: config_schema/job.schema.json
# (its layer branches come from the layer table, engine/layers/registry.cpp)
# and man/dtrain-job.5 from it. Run after adding a layer type or option:
#   ninja -C build cli/dtrain && tools/gen_docs.sh [build/cli/dtrain]
# tests/integration/test_cli.py and test_man_job.py fail while either is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/cli/dtrain}
"$bin" schema > config_schema/job.schema.json.new
mv config_schema/job.schema.json.new config_schema/job.schema.json
python3 man/gen_job_man.py
echo "regenerated config_schema/job.schema.json and man/dtrain-job.5"
