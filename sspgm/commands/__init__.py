"""Sub-commands of ``sspgm``; each module defines ``register(subparsers)``."""
