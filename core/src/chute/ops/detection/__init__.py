"""Detection operators: bounding boxes (flip, paste, random crop, SSD encoding)."""
