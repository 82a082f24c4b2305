"""ragline.store"""
