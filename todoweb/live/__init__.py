"""Live delivery: the typed events writes publish (`events`), one hub per process that
subscribes once per watched group and paces the fan-out (`hub`), the session and
dashboard websockets (`consumers`, `routing`), and who may watch (`viewers`,
`access`)."""
