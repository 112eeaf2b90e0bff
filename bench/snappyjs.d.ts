/** snappyjs ships no types: the block-format functions the benchmark uses. */
declare module 'snappyjs' {
  const snappyjs: {
    compress(input: Uint8Array): Uint8Array;
    uncompress(input: Uint8Array, maxLength?: number): Uint8Array;
  };
  export default snappyjs;
}
