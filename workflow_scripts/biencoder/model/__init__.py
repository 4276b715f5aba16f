"""The encoder library shared by the bi-encoder stages: the layer registry (architectures),
model specs and truncation by strategy (truncation), the lean inference encoders and every
depth from one pass (encoder). No stage logic, no results I/O.

May import: core, and itself."""
