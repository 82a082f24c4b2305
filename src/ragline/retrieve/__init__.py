"""ragline.retrieve"""
