#!/bin/bash
# Two builds of PagedChat side by side in the same run, alternated: decode and prompt speed
# (pagedchat-cli bench, 2 threads, the default model) and the wall time of the app's UI suites.
# For a refactor that must not move either: build the commit before it in a worktree, e.g.
#   git worktree add /tmp/old <commit> && cmake -S /tmp/old -B /tmp/old/build -G Ninja \
#     -DPAGEDCHAT_CUDA=OFF && cmake --build /tmp/old/build --target pagedchat-cli pagedchat pagedchat-server <ui suites>
# then: bash tests/bench/compare_builds.sh /tmp/old/build build [rounds]
set -euo pipefail
OLD="$1"
NEW="$2"
ROUNDS="${3:-3}"
MODEL="${PAGEDCHAT_MODEL:-$HOME/.cache/pagedchat/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
# UI suites that run whole turns on the model (present in both trees).
SUITES="test_app_api_server|test_chat_sampling|test_chat_versions|test_context_limit|test_context_meter|test_continue_reply"
SUITES="$SUITES|test_fork_at_message|test_interrupted_reply|test_chat_management|test_lessons|test_first_run"
SUITES="$SUITES|test_kv_step_controls|test_main_window|test_model_and_settings|test_small_window|test_remote_lessons"
echo "build  round  prompt tok/s  decode tok/s  floor tok/s  UI suites (s)  passed"
for round in $(seq "$ROUNDS"); do
  for which in old new; do
    dir="$OLD"
    [ "$which" = new ] && dir="$NEW"
    # The bench's last line: threads, prompt, prompt tok/s, decode, decode tok/s, MiB/token, floor.
    read -r _ _ ptok _ dtok _ floor _ < <("$dir/app/cli/pagedchat-cli" bench --model "$MODEL" --threads 2 2>&1 | tail -1)
    start=$(date +%s.%N)
    passed=$(ctest --test-dir "$dir" -R "^($SUITES)\$" 2>&1 | grep -c ' Passed' || true)
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    printf "%-5s  %5d  %12s  %12s  %11s  %13.1f  %6s\n" "$which" "$round" "$ptok" "$dtok" "$floor" "$secs" "$passed"
  done
done
