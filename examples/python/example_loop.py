"""What the examples share: their command line and the loop that publishes frames to membridge-view."""
import argparse
import time


def parse_args(doc, name, count_option, count_default):
    """The examples' options: --name, --<count_option> (how many points), --frames, --seconds, --slots."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--name", default=name, help="socket name (membridge-view --name NAME)")
    p.add_argument(f"--{count_option}", type=int, default=count_default)
    p.add_argument("--frames", type=int, default=0, help="stop after this many frames (0: no limit)")
    p.add_argument("--seconds", type=float, default=0, help="stop after this many seconds (0: no limit; Ctrl-C stops too)")
    p.add_argument("--slots", type=int, default=3)
    return p.parse_args()


def publish_frames(pub, a, write_frame):
    """Waits until the viewers are done with frame - slots (FramePublisher.wait_consumed), calls
    write_frame(frame) (it acquires the frame's slot, writes it and releases it on its stream), then
    announces the frame, until a.frames frames or a.seconds seconds have passed or Ctrl-C; prints
    the frame rate once a second. Returns the number of frames published."""
    frame, last_frame, last_time = 0, 0, time.perf_counter()
    try:
        end = time.perf_counter() + a.seconds if a.seconds else float("inf")
        while (a.frames == 0 or frame < a.frames) and time.perf_counter() < end:
            # Never more than `slots` frames ahead of the viewers (as sample 03's C++ producer): the slot's
            # last reader is done, so the GPU wait that acquire enqueues is already met.
            while frame >= a.slots and not pub.wait_consumed(frame - a.slots, 0.1):
                pass  # back in Python every 0.1 s, so Ctrl-C still stops
            write_frame(frame)
            pub.publish_frame(frame)
            frame += 1
            if (now := time.perf_counter()) - last_time >= 1.0:
                print(f"frame {frame}: {(frame - last_frame) / (now - last_time):.0f} fps, "
                      f"{pub.subscriber_count} subscriber(s)", flush=True)
                last_frame, last_time = frame, now
    except KeyboardInterrupt:
        pass
    return frame
