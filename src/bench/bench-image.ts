/**
 * The image the bench's image events carry: a JPEG of a 640x480 frame made here with sharp (a
 * dependency of the store, for thumbnails), about 42 KiB at quality 80, the size of a camera's
 * compressed frame in the repository's fixtures (test/fixtures/rocket.jpg is 41,501 bytes); or the
 * operator's own (`--image FILE`), so the bytes per event are those of the box's cameras. Made, not
 * shipped: the package carries no test fixtures.
 */
import fs from 'node:fs';

/** The image of the image events. */
export interface BenchImage {
  bytes: Buffer;
  width: number;
  height: number;
  /** `generated` or the file given. */
  source: string;
}

const WIDTH = 640;
const HEIGHT = 480;
/** Amplitude of the seeded noise over the gradients: what makes the JPEG about as large as a photo's. */
const NOISE = 18;

/** Raw RGB pixels: colour gradients, a diagonal wave and seeded noise, the same on every run. */
function framePixels(): Buffer {
  const raw = Buffer.alloc(WIDTH * HEIGHT * 3);
  let seed = 7;
  const noise = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return (seed / 0x7fffffff - 0.5) * NOISE;
  };
  const channel = (value: number) => Math.max(0, Math.min(255, Math.round(value)));
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      const i = (y * WIDTH + x) * 3;
      const n = noise();
      raw[i] = channel((x * 255) / WIDTH + n);
      raw[i + 1] = channel((y * 255) / HEIGHT + n);
      raw[i + 2] = channel(128 + 100 * Math.sin((x + y) / 23) + n);
    }
  }
  return raw;
}

/**
 * The generated frame, or the image in `file`.
 * @throws Error naming `--image` when `file` cannot be read or sharp reads no image in it
 */
export async function benchImage(file?: string): Promise<BenchImage> {
  // sharp loads for this command only (about 30 ms and its native library).
  const { default: sharp } = await import('sharp');
  if (file === undefined) {
    const bytes = await sharp(framePixels(), { raw: { width: WIDTH, height: HEIGHT, channels: 3 } }).jpeg({ quality: 80 }).toBuffer();
    return { bytes, width: WIDTH, height: HEIGHT, source: 'generated' };
  }
  try {
    const bytes = fs.readFileSync(file);
    const { width, height } = await sharp(bytes).metadata();
    if (!width || !height) throw new Error('no dimensions');
    return { bytes, width, height, source: file };
  } catch (err) {
    throw new Error(`--image ${file}: not an image file sharp can read (${(err as Error).message})`, { cause: err });
  }
}
