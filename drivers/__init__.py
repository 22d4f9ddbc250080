"""robodyn.drivers"""
