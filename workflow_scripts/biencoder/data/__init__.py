"""Data stages of the bi-encoder study: the embedded docstring generator (docstrings, its
pairs distinct as the encoder sees them: encoder_view) and the real downloads prepared into
BEIR files and training triples (prepare_data).

May import: core. Never imports another biencoder subpackage or stage."""
