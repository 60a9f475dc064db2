"""Live-stream fixtures for tests: a looping H.264 clip served over HTTP MPEG-TS or RTSP.

Plain package (no pytest import) so tests, benches and ad-hoc scripts can all use it::

    from tests.live import HttpTsServer, RtspServer, write_h264_clip, wait_until

    clip = write_h264_clip(tmp_path / "clip.mp4")
    with HttpTsServer(clip) as cam:
        cap = cv2.VideoCapture(cam.url, cv2.CAP_FFMPEG, params)
        ...
        cam.stop()    # camera goes away: listener closed, open connections closed (EOF)
        cam.hang()    # or: camera freezes: connections stay open, no more bytes
        cam.start()   # camera comes back on the same port

Every listening TCP socket is on 127.0.0.1 (ffmpeg's RTSP-over-UDP client, feeder or OpenCV
reader, binds its RTP/RTCP sockets to 0.0.0.0; it has no option to pick the address). Every
wait is bounded. Child processes run in their own process group and are killed on
``close()``/``__exit__`` (also on exceptions) and, as a last resort, at interpreter exit.
Their output goes to a log file (``log_path=...``, else a temp file deleted on close unless
EDGEHF_LIVE_KEEP_LOGS is set; ``.log_text()`` reads it); EDGEHF_LIVE_FFMPEG_LOGLEVEL /
EDGEHF_LIVE_RTSP_LOGLEVEL make the children more verbose.

Needs ``ffmpeg`` (with libx264) on PATH; ``RtspServer`` also needs ``rtsp-server-perl``
(Debian package of the same name). ``have_ffmpeg()`` / ``have_rtsp_server()`` let tests skip.
"""

from ._proc import free_port, free_udp_port_block, wait_until
from .clips import have_ffmpeg, write_h264_clip
from .http_ts import HttpTsServer
from .rtsp import RTSP_CAPTURE_OPTIONS, RtspServer, have_rtsp_server

__all__ = [
    "free_port",
    "free_udp_port_block",
    "wait_until",
    "have_ffmpeg",
    "have_rtsp_server",
    "write_h264_clip",
    "HttpTsServer",
    "RtspServer",
    "RTSP_CAPTURE_OPTIONS",
]
