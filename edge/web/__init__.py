"""The edge's small web framework: requests and responses, the layers, the operation
registry and its parameters, the documents made from it, and problem documents."""
