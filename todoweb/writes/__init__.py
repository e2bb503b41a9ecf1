"""Every change to the data: the only code that writes revisions or publishes live
events. An agent's tool call (`record`), a person's edit, rename, close or archive
(`people`), share links, tokens and rounds; `revisions` appends a revision for both
agents and people; `sql` holds the write path's statements."""
