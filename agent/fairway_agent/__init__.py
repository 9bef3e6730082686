"""The Fairway node agent: runs the pods the scheduler places on this node (docs/agent.md).

It imports no Django: a GPU node needs only this package, a websocket client, psutil and
nvidia-ml-py.
"""

__version__ = "0.1.0"
