#pragma once
/// @file dlock.hpp
/// Everything public in one include.

#include <dlock/doctor.hpp>
#include <dlock/election.hpp>
#include <dlock/errors.hpp>
#include <dlock/hold.hpp>
#include <dlock/inspect.hpp>
#include <dlock/multi_lock.hpp>
#include <dlock/mutex.hpp>
#include <dlock/observer.hpp>
#include <dlock/recursive_mutex.hpp>
#include <dlock/semaphore.hpp>
#include <dlock/session.hpp>
#include <dlock/shared_mutex.hpp>
#include <dlock/with_lock.hpp>
