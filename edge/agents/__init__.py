"""The agent-tool server (MCP): the tools of the catalog, over HTTP at /mcp and over stdio."""
