// Tx frames (see tx_frames.hpp): the batch's buffers.
#include "engine/tx_frames.hpp"

namespace mroce::engine {

void TxFrames::init(io::PacketIo& io, uint16_t burst, Counters& counters, OutputLog& log) {
  io_ = &io;
  counters_ = &counters;
  log_ = &log;
  burst_ = burst;
  q_.reset(new io::PacketBuf*[burst]);
  scratch_storage_.reset(new uint8_t[io::kBufSize]);
  scratch_.data = scratch_storage_.get();
  scratch_.cap = io::kBufSize;
}

}  // namespace mroce::engine
