"""What the outside talks to: the HTTP API (`api`, django-ninja), the MCP server
(`mcp`), the board's pages and actions (`board`), health checks, and token auth."""
