"""ragline.evaluate"""
