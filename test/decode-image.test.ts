/**
 * The base64 of `base64Image` (src/events/decode-image.ts; docs/API.md, "Create an event",
 * `image_decode_failed`): a real photo's bytes come back exactly from plain base64, from base64
 * wrapped by the usual encoders, and behind a data URI; text whose characters Node's decoder would
 * skip or cannot make whole bytes of is refused.
 */
import t, { type Test } from 'tap';
import { decodeImage } from '../src/events/decode-image.js';
import { fixture } from './support/events.js';

const jpeg = fixture('rocket.jpg');
const plain = jpeg.toString('base64');

/** Refused as not base64, naming the field. */
async function refused(t: Test, text: string, name: string): Promise<void> {
  await t.rejects(decodeImage(text, 'images[0].base64Image'), { code: 'image_decode_failed', message: 'images[0].base64Image is not valid base64' }, name);
}

t.test('the exact bytes, however the base64 is laid out', async (t) => {
  const layouts: [string, string][] = [
    ['plain', plain],
    ['LF every 76 (base64, openssl base64)', plain.replace(/(.{76})/g, '$1\n')],
    ['CRLF every 76', plain.replace(/(.{76})/g, '$1\r\n')],
    ['a trailing newline', `${plain}\n`],
    ['one space after the first 4 characters', `${plain.slice(0, 4)} ${plain.slice(4)}`],
    ['a data URI', `data:image/jpeg;base64,${plain}`],
  ];
  for (const [name, text] of layouts) {
    const { image, format } = await decodeImage(text, 'images[0].base64Image');
    t.same(image.bytes, jpeg, `${name}: the same bytes`);
    t.equal(image.contentType, 'image/jpeg', name);
    t.equal(format.mime, 'image/jpeg', name);
  }
});

t.test('what does not decode whole is refused', async (t) => {
  await refused(t, `${plain.slice(0, 100)}!${plain.slice(100)}`, 'a stray character');
  await refused(t, `${plain}A`, 'one character past whole groups');
  await refused(t, 'AAAAA=', 'five characters, padded');
  await refused(t, plain.slice(0, 301), 'truncated mid-group');
  await refused(t, '', 'empty');
  await refused(t, ' \n\t ', 'only white space');
});
