"""robodyn.daemon"""
