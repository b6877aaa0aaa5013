"""Segmentation (fn.segmentation.*): segmentation_ops.py declares random_object_bbox,
random_mask_pixel and select_masks (CPU, as in DALI) over segmentation_kernels.py;
mask_kernels.py decodes COCO's RLE masks and rasterizes polygons (readers.coco's masks)."""
