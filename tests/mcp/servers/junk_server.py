"""A broken MCP server for the client's tests: it writes lines that are not JSON-RPC and answers
nothing (with --deep, one reply nested 100000 levels deep instead)."""

import sys

deep = "--deep" in sys.argv
for line in sys.stdin:
    if deep:
        sys.stdout.write('{"jsonrpc": "2.0", "id": 1, "result": ' + "[" * 100000 + "]" * 100000 + "}\n")
    else:
        sys.stdout.write("Server starting... listening on stdio!\n")
        sys.stdout.write("{not json at all\n")
    sys.stdout.flush()
