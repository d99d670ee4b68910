"""A throwaway feature that declares a share kind: this folder and one settings line (SHARE_KINDS) are all it takes."""
