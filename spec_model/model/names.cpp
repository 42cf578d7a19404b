// Printable names of the model's enumerations (traces, test output).
#include "model/types.hpp"

namespace mroce::model {

std::string_view status_name(Status s) {
    switch (s) {
        case Status::Success:
            return "Success";
        case Status::LocalLength:
            return "LocalLength";
        case Status::RemoteAccess:
            return "RemoteAccess";
        case Status::RemoteInvalid:
            return "RemoteInvalid";
        case Status::RemoteLength:
            return "RemoteLength";
        case Status::RnrRetryExceeded:
            return "RnrRetryExceeded";
        case Status::ConnectionFailed:
            return "ConnectionFailed";
        case Status::Flushed:
            return "Flushed";
        case Status::Canceled:
            return "Canceled";
        case Status::LocalProtection:
            return "LocalProtection";
    }
    return "UNKNOWN";
}

std::string_view work_op_name(WorkOp op) {
    switch (op) {
        case WorkOp::Send:
            return "Send";
        case WorkOp::Write:
            return "Write";
        case WorkOp::WriteImm:
            return "WriteImm";
        case WorkOp::Read:
            return "Read";
        case WorkOp::Recv:
            return "Recv";
    }
    return "UNKNOWN";
}

std::string_view path_state_name(PathState s) {
    switch (s) {
        case PathState::Active:
            return "ACTIVE";
        case PathState::Suspect:
            return "SUSPECT";
        case PathState::Failed:
            return "FAILED";
    }
    return "UNKNOWN";
}

std::string_view conn_state_name(ConnState s) {
    switch (s) {
        case ConnState::Connecting:
            return "Connecting";
        case ConnState::Established:
            return "Established";
        case ConnState::Closing:
            return "Closing";
        case ConnState::Closed:
            return "Closed";
        case ConnState::Failed:
            return "Failed";
    }
    return "UNKNOWN";
}

}  // namespace mroce::model
