"""An MCP server written with the `mcp` Python SDK (pinned in installer/install-deps.sh), for the
client's tests (tests/mcp/test_mcp_stdio.cpp): real tools, and tools that misbehave on purpose.

Usage: tool_server.py [--http PORT]   (stdio without --http; Streamable HTTP at
http://127.0.0.1:PORT/mcp with it)
Tools: read_file(path); add(a, b); count_to(n) (progress every step); big(mebibytes);
crash() (the process exits mid-call); hang() (never answers); learn_tool() (adds a tool
'shout' and says the list changed); fail() (the tool reports an error).
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("test-tools", version="1.0")


@app.tool()
def read_file(path: str) -> str:
    """Returns the text of a file."""
    with open(path, encoding="utf-8") as f:
        return f.read()


@app.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@app.tool()
async def count_to(n: int, ctx: Context) -> str:
    """Counts to n, reporting progress at every step."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"counted to {n}"


@app.tool()
def big(mebibytes: int) -> str:
    """Returns a text of this many MiB."""
    return "x" * (mebibytes << 20)


@app.tool()
def crash() -> str:
    """Ends the server's process in the middle of the call."""
    sys.stderr.write("tool_server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@app.tool()
async def hang() -> str:
    """Never returns."""
    await asyncio.sleep(3600)
    return "unreachable"


@app.tool()
async def learn_tool(ctx: Context) -> str:
    """Adds the tool 'shout' and tells the client its tools changed."""

    def shout(text: str) -> str:
        """Returns the text in capitals."""
        return text.upper()

    app.add_tool(shout)
    await ctx.request_context.session.send_tool_list_changed()
    return "learned shout"


@app.tool()
def fail() -> str:
    """Fails."""
    raise ValueError("this tool always fails")


@app.tool()
def header(name: str, ctx: Context) -> str:
    """Returns the value of a header of the HTTP request that carried this call ('' over stdio)."""
    request = getattr(ctx.request_context, "request", None)
    return request.headers.get(name, "") if request is not None else ""


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        app.run("streamable-http", host="127.0.0.1", port=port)
    else:
        app.run("stdio")
