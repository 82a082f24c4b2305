"""ragline.generate"""
