// Share 1 of 2 of the fault matrix (test/faults/matrix.ts); `npm run test:faults` runs both.
import { defineMatrixShare } from './define.js';

defineMatrixShare(0, 2);
