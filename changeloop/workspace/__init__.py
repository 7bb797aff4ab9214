"""Where things are: the OpenSpec workspace and its changes (``discovery``,
``changeref``) and changeloop's own state under ``.changeloop/`` (``state``).
"""
